package agentclient

import (
	"context"

	"github.com/sandgate/sandgate/core/sandbox"
)

// Runner runs argv in the sandbox through the engine (not the agent) and
// returns its exit code: what the backstop below needs of a backend.
type Runner func(ctx context.Context, argv []string) (int, error)

// KillGroupVia is ExecOptions.KillGroup on run: it SIGKILLs process group
// pid with an exec of the core's kill script, in the background (bounded
// by ReturnGrace), so that a loaded engine does not hold the call.
func KillGroupVia(run Runner) func(ctx context.Context, pid int) {
	return func(ctx context.Context, pid int) {
		argv, err := sandbox.KillGroupArgv(pid)
		if err != nil {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandbox.ReturnGrace)
			defer cancel()
			_, _ = run(ctx, argv)
		}()
	}
}

// GroupAliveVia is ExecOptions.GroupAlive on run: an exec of the core's
// probe script.
func GroupAliveVia(run Runner) func(ctx context.Context, pid int) (bool, error) {
	return func(ctx context.Context, pid int) (bool, error) {
		argv, err := sandbox.GroupProbeArgv(pid)
		if err != nil {
			return false, err
		}
		code, err := run(ctx, argv)
		if err != nil {
			return false, err
		}
		return sandbox.GroupAlive(code)
	}
}
