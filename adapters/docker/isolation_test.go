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

	f.runtimes = []string{"runsc"}
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
