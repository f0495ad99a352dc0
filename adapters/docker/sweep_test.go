package docker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// The first adoption by a provider sweeps stale temporaries, later ones do
// not (the hot path stays one inspect); a failed sweep is retried on the
// next adoption and never fails the provision; a restart of a stopped
// sandbox sweeps again.
func TestAdoptionSweepsOnce(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	sweeps, failing := 0, true
	f.onExec = func(argv []string) fakeExecBehaviour {
		if len(argv) > 2 && argv[2] == shell.Sweep {
			sweeps++
			if failing {
				return fakeExecBehaviour{createErr: errors.New("exec refused")}
			}
		}
		return fakeExecBehaviour{}
	}
	p := fakeProvider(f)
	ctx := context.Background()
	_, err := p.Provision(ctx, spec("ses_a"))
	require.NoError(t, err)
	require.Zero(t, sweeps, "a new sandbox has nothing to sweep")

	sb, err := p.Provision(ctx, spec("ses_a"))
	require.NoError(t, err, "a failed sweep does not fail the adoption")
	require.Equal(t, 1, sweeps)
	failing = false
	_, err = p.Provision(ctx, spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, 2, sweeps, "retried after a failure")
	_, err = p.Provision(ctx, spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, 2, sweeps, "swept once")

	f.mu.Lock()
	f.containers[sb.ID()].running = false
	f.mu.Unlock()
	_, err = p.Provision(ctx, spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, 3, sweeps, "a restarted sandbox is swept again")

	require.Equal(t, "/", sandbox.SweepArgs(p.opts.StaleTempAge, "/")[5])
	require.Equal(t, sandbox.DefaultStaleTempAge, p.opts.StaleTempAge)
}
