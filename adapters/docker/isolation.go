package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/core/sandbox"
)

// checkIsolation refuses, before anything is created, a gVisor spec this
// provider cannot honour: no runtime configured, one the daemon does not
// list (asked each time: an operator may register runsc with a SIGHUP
// while the executor runs), or one registered with flags that break the
// contract (checkRunscArgs). A runc spec needs nothing.
func (p *Provider) checkIsolation(ctx context.Context, spec sandbox.Spec) error {
	if spec.Isolation != sandbox.IsolationGVisor {
		return nil
	}
	rt := p.opts.GVisorRuntime
	if rt == "" {
		return fmt.Errorf("provision %s: %w: this executor offers no gVisor runtime (SANDGATE_GVISOR_RUNTIME is empty)", spec.SessionID, sandbox.ErrIsolationUnavailable)
	}
	info, err := p.eng.Info(ctx)
	if err != nil {
		return fmt.Errorf("provision %s: %w", spec.SessionID, translate(err, "info"))
	}
	r, ok := info.Runtimes[rt]
	if !ok {
		return fmt.Errorf("provision %s: %w: the Docker engine has no runtime %q (register runsc in daemon.json \"runtimes\": docs/OPERATIONS.md)", spec.SessionID, sandbox.ErrIsolationUnavailable, rt)
	}
	if err := checkRunscArgs(r.Args, spec.Gate != nil); err != nil {
		return fmt.Errorf("provision %s: %w: runtime %q: %w (register it with runtimeArgs %q: docs/OPERATIONS.md)", spec.SessionID, sandbox.ErrIsolationUnavailable, rt, err, runscArgs)
	}
	return nil
}

// runscArgs are the runtimeArgs a gVisor runtime is registered with
// (build/ensure-gvisor.sh).
var runscArgs = []string{"--network=host", "--overlay2=none", "--file-access=shared"}

// checkRunscArgs refuses a runsc whose flags would break the contract:
//   - a root overlay kept by the Sentry (its default) holds every write to
//     the root filesystem where the engine's archive endpoint, which
//     exports and stages large writes, cannot see it;
//   - exclusive file access (its default) lets the Sentry cache what the
//     archive endpoint changes under it;
//   - for a gated sandbox, which joins its gate's network namespace,
//     anything but --network=host: with it the Sentry makes its sockets
//     there, as its own host uid, so the gate's owner-match firewall
//     governs them as it governs a runc sandbox's (TestSecurityGVisor);
//     gVisor's own netstack would write the gate's interface through a
//     packet socket, past that firewall.
func checkRunscArgs(args []string, gated bool) error {
	if v := runscFlag(args, "overlay2", "root:self"); v != "none" {
		return fmt.Errorf("--overlay2=%s keeps the root filesystem's writes inside the Sentry", v)
	}
	if v := runscFlag(args, "file-access", "exclusive"); v != "shared" {
		return fmt.Errorf("--file-access=%s lets the Sentry cache files the engine changes", v)
	}
	if v := runscFlag(args, "network", "sandbox"); gated && v != "host" {
		return fmt.Errorf("--network=%s would take a gated sandbox past its gate's firewall", v)
	}
	return nil
}

// runscFlag is the value runsc's flag name takes from args (the last one
// wins, as in Go's flag package), dflt when none is given.
func runscFlag(args []string, name, dflt string) string {
	v := dflt
	for i := 0; i < len(args); i++ {
		flag, isFlag := strings.CutPrefix(args[i], "-")
		n, value, hasValue := strings.Cut(strings.TrimPrefix(flag, "-"), "=")
		if !isFlag || n != name {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		v = value
	}
	return v
}
