package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/events"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

func fakeProvider(f *fakeEngine) *Provider {
	return newProvider(f, Options{RemoveTimeout: 2 * time.Second})
}

func spec(sid string) sandbox.Spec {
	return sandbox.Spec{SessionID: domain.MustParseSessionID(sid), Image: "img"}
}

// A create that loses the name race adopts the winner (C-PROV-4).
func TestProvisionLosesRaceAndAdopts(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	var winner *fakeContainer
	f.onCreate = func(name string) error {
		if winner == nil {
			winner = f.addContainer(fakeContainer{name: name, image: "img", workdir: sandbox.DefaultWorkdir,
				labels: map[string]string{sandbox.LabelSession: "ses_a"}})
		}
		return nil
	}
	sb, err := fakeProvider(f).Provision(context.Background(), spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, winner.id, sb.ID())
	require.True(t, winner.running, "the adopted winner is started")
}

// A foreign holder of the name is refused and left alone (C-PROV-5).
func TestProvisionRefusesForeign(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	c := f.addContainer(fakeContainer{name: ContainerName("ses_a"), image: "img", workdir: sandbox.DefaultWorkdir})
	p := fakeProvider(f)
	_, err := p.Provision(context.Background(), spec("ses_a"))
	require.ErrorIs(t, err, errForeign)
	_, err = p.Attach(context.Background(), domain.MustParseSessionID("ses_a"))
	require.ErrorIs(t, err, errForeign)
	_, err = p.Export(context.Background(), domain.MustParseSessionID("ses_a"), "/workspace")
	require.ErrorIs(t, err, errForeign)
	require.Contains(t, f.containers, c.id)
	require.NotContains(t, f.calls, "remove "+c.id)
}

func TestProvisionPullsMissingImage(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	s := spec("ses_a")
	s.Image = "other:1"
	_, err := fakeProvider(f).Provision(context.Background(), s)
	require.NoError(t, err)
	require.Contains(t, f.calls, "pull other:1")

	f = newFakeEngine()
	f.pullErr = "pull access denied"
	_, err = fakeProvider(f).Provision(context.Background(), s)
	require.ErrorContains(t, err, `image "other:1" is not present and cannot be pulled`)
	require.ErrorContains(t, err, "pull access denied")
	require.ErrorIs(t, err, sandbox.ErrImageUnavailable)
	require.Empty(t, f.containers, "nothing created")
}

func TestProvisionInvalidSpecCreatesNothing(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	s := spec("ses_a")
	s.Env = map[string]string{"A=B": "x"}
	_, err := fakeProvider(f).Provision(context.Background(), s)
	require.ErrorContains(t, err, `"A=B"`)
	require.Empty(t, f.calls)
}

// A failing revoker aborts the reap with nothing removed (C-REAP-1).
func TestReapRevokesFirst(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.addContainer(fakeContainer{name: "x", labels: map[string]string{sandbox.LabelSession: "ses_a"}})
	tokens := &recTokens{f: f, revokeErr: errors.New("store down")}
	p := newProvider(f, Options{Tokens: tokens})
	require.ErrorContains(t, p.Reap(context.Background(), domain.MustParseSessionID("ses_a")), "store down")
	require.Len(t, f.containers, 1)
	tokens.revokeErr = nil
	require.NoError(t, p.Reap(context.Background(), domain.MustParseSessionID("ses_a")))
	require.Empty(t, f.containers)
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_a")}, tokens.revoked, "one revoke per Reap")
}

// Sandboxes go before gates, and a removal already in progress is waited
// out rather than reported.
func TestReapOrderAndRemovalInProgress(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	gate := f.addContainer(fakeContainer{name: "g", labels: map[string]string{sandbox.LabelSession: "ses_a", labelRole: roleGate}})
	sb := f.addContainer(fakeContainer{name: "s", labels: map[string]string{sandbox.LabelSession: "ses_a", labelRole: roleSandbox}})
	other := f.addContainer(fakeContainer{name: "o", labels: map[string]string{sandbox.LabelSession: "ses_b"}})
	f.onRemove = func(id string, n int) error {
		if id == gate.id && n == 1 {
			go func() { // the daemon finishes the removal a moment later
				time.Sleep(50 * time.Millisecond)
				f.mu.Lock()
				delete(f.containers, gate.id)
				f.mu.Unlock()
			}()
			return fmt.Errorf("removal of container %s is already in progress: %w", id, cerrdefs.ErrConflict)
		}
		return nil
	}
	require.NoError(t, fakeProvider(f).Reap(context.Background(), domain.MustParseSessionID("ses_a")))
	require.Equal(t, []string{"remove " + sb.id, "remove " + gate.id}, f.calls)
	require.Contains(t, f.containers, other.id, "selection is by label")
}

func TestReapTimesOut(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.addContainer(fakeContainer{name: "s", labels: map[string]string{sandbox.LabelSession: "ses_a"}})
	f.onRemove = func(id string, _ int) error {
		return fmt.Errorf("removal of container %s is already in progress: %w", id, cerrdefs.ErrConflict)
	}
	p := newProvider(f, Options{RemoveTimeout: 100 * time.Millisecond})
	require.ErrorIs(t, p.Reap(context.Background(), domain.MustParseSessionID("ses_a")), context.DeadlineExceeded)
}

func TestOwnedSkipsInvalidIDs(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	for _, v := range []string{"ses_a", "ses_a", "ses_b", "NOT VALID"} {
		f.addContainer(fakeContainer{name: v, labels: map[string]string{sandbox.LabelSession: v}})
	}
	ids, err := fakeProvider(f).Owned(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_b")}, ids)
}

func provisioned(t *testing.T, f *fakeEngine) *handle {
	t.Helper()
	sb, err := fakeProvider(f).Provision(context.Background(), spec("ses_a"))
	require.NoError(t, err)
	return sb.(*handle)
}

// A straggler holding stdout open does not hold the call once the daemon
// reports the command finished.
func TestExecStragglerDoesNotHold(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = func([]string) fakeExecBehaviour {
		return fakeExecBehaviour{stdout: "done\n", exitCode: 3, holdStream: true}
	}
	sb := provisioned(t, f)
	start := time.Now()
	res, err := sb.Exec(context.Background(), sandbox.ExecRequest{Command: "x"})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, "done\n", res.Stdout)
	require.Equal(t, 3, res.ExitCode)
	require.False(t, res.TimedOut)
}

// A stream that ends while the daemon still reports the command running
// (it closed its streams) is followed until the daemon says it finished.
func TestExecStreamEndsEarly(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = func([]string) fakeExecBehaviour {
		return fakeExecBehaviour{stdout: "partial", exitCode: 0, runningPolls: 3}
	}
	res, err := provisioned(t, f).Exec(context.Background(), sandbox.ExecRequest{Command: "x"})
	require.NoError(t, err)
	require.Equal(t, "partial", res.Stdout)
	require.Equal(t, 0, res.ExitCode)
}

// The wrapper's header is stripped from stderr; the rest is verbatim.
func TestExecStripsHeader(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = func([]string) fakeExecBehaviour {
		return fakeExecBehaviour{stderr: sandbox.HeaderPrefix + "17\nwarn\n", exitCode: 1}
	}
	res, err := provisioned(t, f).Exec(context.Background(), sandbox.ExecRequest{Command: "x", Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "warn\n", res.Stderr)
	require.False(t, res.TimedOut)
}

func TestExecGoneIsNotFound(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	sb := provisioned(t, f)
	f.mu.Lock()
	f.containers[sb.id].running = false
	f.mu.Unlock()
	_, err := sb.Exec(context.Background(), sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	f.mu.Lock()
	delete(f.containers, sb.id)
	f.mu.Unlock()
	_, err = sb.Exec(context.Background(), sandbox.ExecRequest{Command: "true"})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.ErrorIs(t, sb.WriteFile(context.Background(), "/w/a", []byte("x")), sandbox.ErrNotFound)
	_, err = sb.ReadFile(context.Background(), "/w/a")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

// An exec whose start the daemon fails because the container is being
// removed answers ErrNotFound, not the daemon's 500 (a removal racing
// short execs).
func TestExecStartFailsAsRemovalRaces(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	sb := provisioned(t, f)
	f.onExec = func([]string) fakeExecBehaviour {
		f.containers[sb.id].running = false // under f.mu: the removal has begun
		return fakeExecBehaviour{attachErr: errors.New("unable to upgrade to tcp, received 500")}
	}
	_, err := sb.Exec(context.Background(), sandbox.ExecRequest{Command: "true", Timeout: time.Second})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

// A failed top is no evidence that the sandbox went away, even as
// NotFound (the daemon calls any task error whose text says "not found"
// NotFound): a command killed by a signal in a sandbox that inspect calls
// running keeps its 137.
func TestExecTopFailureIsNotGone(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = func([]string) fakeExecBehaviour { return fakeExecBehaviour{exitCode: sandbox.ExitKilled} }
	f.topErr = notFound("task")
	res, err := provisioned(t, f).Exec(context.Background(), sandbox.ExecRequest{Command: "kill -9 $$"})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExitKilled, res.ExitCode)
}

// neverEnds is an exec that runs and holds its stream forever.
func neverEnds([]string) fakeExecBehaviour {
	return fakeExecBehaviour{holdStream: true, runningPolls: 1 << 30}
}

// A cancelled context is an error, not a result, and returns promptly.
func TestExecCancelled(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = neverEnds
	sb := provisioned(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "sleep 100"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)
}

// An overrunning command on a loaded daemon (inspect and top answer in
// seconds) is still answered by deadline + ReturnGrace (C-EXEC-3): the watch
// gives up early enough to kill the group and ask about the sandbox, and
// that question is cut at the bound.
func TestExecReturnsByBoundOnSlowDaemon(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = neverEnds
	sb := provisioned(t, f)
	f.mu.Lock()
	f.lookDelay = 2 * time.Second
	f.mu.Unlock()
	start := time.Now()
	res, err := sb.Exec(context.Background(), sandbox.ExecRequest{Command: "sleep 100", Timeout: time.Second})
	took := time.Since(start)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, sandbox.ExitKilled, res.ExitCode)
	require.LessOrEqual(t, took, time.Second+sandbox.ReturnGrace+100*time.Millisecond)
}

// A write whose stream the engine's kill announcement cut answers
// ErrNotFound even while the daemon still calls the container running with
// its init alive (a busy daemon lags its own events), and promptly.
func TestWriteCutByKillIsNotFound(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = neverEnds
	sb := provisioned(t, f)
	f.mu.Lock()
	f.announce = []events.Message{{Action: events.ActionKill, Actor: events.Actor{ID: sb.id, Attributes: map[string]string{"signal": "9"}}}}
	f.topRows = [][]string{{"0", "0", "Ss"}} // the init (pid 0 in the fake's inspect) still listed alive
	f.mu.Unlock()
	start := time.Now()
	err := sb.WriteFile(context.Background(), "/w/a", []byte("x"))
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.Less(t, time.Since(start), watchAfter+2*time.Second)
}

// The write script's exit code and marker are classified; the payload goes
// to stdin whole.
func TestWriteFileClassifies(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.onExec = func([]string) fakeExecBehaviour {
		return fakeExecBehaviour{exitCode: sandbox.ExitNotWritable, stderr: "sandgate-fault:85:-:Read-only file system\n"}
	}
	err := provisioned(t, f).WriteFile(context.Background(), "/etc/x", []byte("payload"))
	var pnw *sandbox.PathNotWritableError
	require.ErrorAs(t, err, &pnw)
	require.Equal(t, "/etc/x", pnw.Path)
	require.Equal(t, "Read-only file system", pnw.Reason)
}

// Bad input is refused before any exec.
func TestFileInputRefusedBeforeExec(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	sb := provisioned(t, f)
	execs := len(f.execs)
	require.Error(t, sb.WriteFile(context.Background(), "relative", nil))
	require.ErrorIs(t, sb.WriteFileStream(context.Background(), "/w/a", nil, -1), sandbox.ErrSizeNotALength)
	_, err := sb.ReadFile(context.Background(), "/w/../etc/passwd")
	require.Error(t, err)
	_, _, err = sb.ReadFileStream(context.Background(), "/w/a", -1)
	require.ErrorIs(t, err, sandbox.ErrSizeNotALength)
	require.Error(t, sb.WriteFiles(context.Background(), []sandbox.FileWrite{{Path: "x"}}))
	require.NoError(t, sb.WriteFiles(context.Background(), nil))
	_, err = sb.Exec(context.Background(), sandbox.ExecRequest{Command: "a\x00b"})
	require.ErrorIs(t, err, sandbox.ErrInvalidExec)
	require.Len(t, f.execs, execs)
}

// Right after a 409 the winner may hold the name without being inspectable
// yet: the loser backs off and adopts it once it shows (C-PROV-4).
func TestProvisionWaitsForInvisibleWinner(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	var once sync.Once
	winner := make(chan *fakeContainer, 1)
	f.onCreate = func(name string) error {
		once.Do(func() {
			go func() {
				time.Sleep(150 * time.Millisecond)
				winner <- f.addContainer(fakeContainer{name: name, image: "img", workdir: sandbox.DefaultWorkdir,
					running: true, labels: map[string]string{sandbox.LabelSession: "ses_a"}})
			}()
		})
		return fmt.Errorf("name in use: %w", cerrdefs.ErrConflict)
	}
	sb, err := fakeProvider(f).Provision(context.Background(), spec("ses_a"))
	require.NoError(t, err)
	require.Equal(t, (<-winner).id, sb.ID())
}

// Owned lists only containers carrying the provider's own labels, so an
// executor never sees (nor reaps as an orphan) another's sandbox.
func TestOwnedScopedToLabels(t *testing.T) {
	t.Parallel()
	f := newFakeEngine()
	f.addContainer(fakeContainer{name: "mine", labels: map[string]string{sandbox.LabelSession: "ses_a", "team": "x"}})
	f.addContainer(fakeContainer{name: "other", labels: map[string]string{sandbox.LabelSession: "ses_b", "team": "y"}})
	f.addContainer(fakeContainer{name: "bare", labels: map[string]string{sandbox.LabelSession: "ses_c"}})
	ids, err := newProvider(f, Options{Labels: map[string]string{"team": "x"}}).Owned(context.Background())
	require.NoError(t, err)
	require.Equal(t, []domain.ID{domain.MustParseSessionID("ses_a")}, ids)
	all, err := fakeProvider(f).Owned(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []domain.ID{domain.MustParseSessionID("ses_a"), domain.MustParseSessionID("ses_b"), domain.MustParseSessionID("ses_c")}, all, "no labels: every labelled container")
}
