package kubernetes

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// sweepExec counts the sweeps it is asked to run, failing them while fail
// is set; any other exec is a test failure.
type sweepExec struct {
	t      *testing.T
	sweeps int
	fail   bool
}

func (s *sweepExec) exec(_ context.Context, _, _ string, argv []string, _ io.Reader, _, _ io.Writer) (int, error) {
	if !slices.Contains(argv, shell.Sweep) {
		s.t.Error("unexpected exec")
		return 0, nil
	}
	s.sweeps++
	if s.fail {
		return 0, errors.New("exec refused")
	}
	return 0, nil
}

// The first adoption of a pod by a provider sweeps stale temporaries, later
// ones do not (the hot path stays one GET); a failed sweep is retried on the
// next adoption and never fails the provision; a new creation has nothing
// to sweep.
func TestAdoptionSweepsOnce(t *testing.T) {
	t.Parallel()
	spec := sandbox.Spec{SessionID: domain.NewID("ses"), Image: "debian:bookworm"}
	p, _ := fakeCluster(t, false, existing(t, spec, "live", corev1.PodRunning))
	ex := &sweepExec{t: t, fail: true}
	p.ex = ex
	ctx := context.Background()
	_, err := p.Provision(ctx, spec)
	require.NoError(t, err, "a failed sweep does not fail the adoption")
	require.Equal(t, 1, ex.sweeps)
	ex.fail = false
	_, err = p.Provision(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, 2, ex.sweeps, "retried after a failure")
	_, err = p.Provision(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, 2, ex.sweeps, "swept once")

	fresh := sandbox.Spec{SessionID: domain.NewID("ses"), Image: "debian:bookworm"}
	_, err = p.Provision(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, 2, ex.sweeps, "a new sandbox has nothing to sweep")
	require.Equal(t, sandbox.DefaultStaleTempAge, p.opts.StaleTempAge)
}
