package docker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// A gVisor spec is refused before anything is created when the provider
// has no runtime for it or the daemon does not list it; with one, the
// sandbox is created under it and marked, and adoption finds it again
// only for a gVisor spec.
func TestProvisionGVisor(t *testing.T) {
	t.Parallel()
	gv := spec("ses_g")
	gv.Isolation = sandbox.IsolationGVisor

	f := newFakeEngine()
	_, err := fakeProvider(f).Provision(context.Background(), gv)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, "SANDGATE_GVISOR_RUNTIME is empty")

	p := newProvider(f, Options{RemoveTimeout: 2 * time.Second, GVisorRuntime: "runsc"})
	_, err = p.Provision(context.Background(), gv)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, `no runtime "runsc"`)
	require.Empty(t, f.containers, "nothing is created for a refused spec")

	f.runtimes = map[string][]string{"runsc": nil}
	_, err = p.Provision(context.Background(), gv)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, `--overlay2=root:self keeps the root filesystem's writes inside the Sentry`)
	f.runtimes["runsc"] = []string{"--overlay2=none"}
	_, err = p.Provision(context.Background(), gv)
	require.ErrorContains(t, err, `--file-access=exclusive lets the Sentry cache`)
	require.Empty(t, f.containers, "nothing is created for a refused spec")

	f.runtimes["runsc"] = []string{"--overlay2=none", "--file-access=shared"}
	_, err = p.Provision(context.Background(), gv)
	require.NoError(t, err)
	c := f.byRef(ContainerName("ses_g"))
	require.NotNil(t, c)
	require.Equal(t, "runsc", c.runtime)
	require.Equal(t, "gvisor", c.labels[labelIsolation])

	_, err = p.Provision(context.Background(), gv)
	require.NoError(t, err, "adopted under the same wall")
	runc := spec("ses_g")
	_, err = p.Provision(context.Background(), runc)
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	require.ErrorContains(t, err, `isolation is "gvisor", requested "runc"`)

	_, err = p.Provision(context.Background(), spec("ses_r"))
	require.NoError(t, err)
	require.Empty(t, f.byRef(ContainerName("ses_r")).runtime, "runc sandboxes take the daemon's default")
}

// A gated gVisor sandbox needs runsc's --network=host (its sockets in the
// gate's namespace, under the firewall); with gVisor's netstack it is
// refused before anything is created.
func TestProvisionGatedGVisor(t *testing.T) {
	t.Parallel()
	gated := gatedSpec("ses_gg")
	gated.Isolation = sandbox.IsolationGVisor

	f := gatedFake()
	f.runtimes = map[string][]string{"runsc": {"--debug", "--overlay2=none", "--file-access", "shared"}}
	p := newProvider(f, Options{RemoveTimeout: 2 * time.Second, GVisorRuntime: "runsc", Tokens: &recTokens{f: f}})
	_, err := p.Provision(context.Background(), gated)
	require.ErrorIs(t, err, sandbox.ErrIsolationUnavailable)
	require.ErrorContains(t, err, `--network=sandbox would take a gated sandbox past its gate's firewall`)
	require.ErrorContains(t, err, `runtimeArgs ["--network=host" "--overlay2=none" "--file-access=shared"]`)
	require.Empty(t, f.containers, "nothing is created for a refused spec")

	f.runtimes["runsc"] = runscArgs
	_, err = p.Provision(context.Background(), gated)
	require.NoError(t, err)
	require.Equal(t, "runsc", f.byRef(ContainerName("ses_gg")).runtime)
	require.Empty(t, f.byRef(GateName("ses_gg")).runtime, "the gate stays a runc container")
}

func TestRunscFlag(t *testing.T) {
	t.Parallel()
	for want, args := range map[string][][]string{
		"sandbox": {nil, {"--debug"}, {"network=host"}, {"--networks=host"}, {"--network=host", "--network=sandbox"}},
		"host":    {{"--network=host"}, {"-network=host"}, {"--network", "host"}, {"--network=none", "-network", "host"}},
		"none":    {{"--network=none"}},
	} {
		for _, a := range args {
			require.Equal(t, want, runscFlag(a, "network", "sandbox"), "%q", a)
		}
	}
}
