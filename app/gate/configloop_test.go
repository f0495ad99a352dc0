package gate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
)

// answer is one response of the fake control plane.
type answer struct {
	status int
	body   []byte
}

// controlPlane answers GET /internal/v1/gate/config with a script of
// answers (the last one repeats) and reports each request's index.
type controlPlane struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []answer
	n      int
	auth   []string
	served chan int
}

func newControlPlane(t *testing.T, script ...answer) *controlPlane {
	t.Helper()
	cp := &controlPlane{t: t, script: script, served: make(chan int, 1000)}
	mux := http.NewServeMux()
	mux.HandleFunc("/internal/v1/gate/config", func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		a := cp.script[min(cp.n, len(cp.script)-1)]
		cp.n++
		n := cp.n
		cp.auth = append(cp.auth, r.Header.Get("Authorization"))
		cp.mu.Unlock()
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
		cp.served <- n
	})
	cp.srv = httptest.NewServer(mux)
	t.Cleanup(cp.srv.Close)
	return cp
}

// await waits until the control plane has answered n requests.
func (cp *controlPlane) await(n int) {
	cp.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-cp.served:
			if got >= n {
				return
			}
		case <-deadline:
			require.FailNow(cp.t, "control plane not called", "want %d requests", n)
		}
	}
}

func (cp *controlPlane) requests() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.n
}

// loopEnv is one config loop against a control plane, run in the
// background until the test ends or it returns by itself.
type loopEnv struct {
	cp     *controlPlane
	proxy  *fakeProxy
	rec    *recorder
	caFile string
	logs   *syncBuffer
	ready  chan struct{}
	done   chan struct{}
	cancel context.CancelFunc
}

func startLoop(t *testing.T, cp *controlPlane, interval time.Duration) *loopEnv {
	t.Helper()
	log, logs := testLogger(t)
	rec := &recorder{}
	e := &loopEnv{
		cp: cp, proxy: newFakeProxy(rec), rec: rec, logs: logs,
		caFile: filepath.Join(t.TempDir(), "ca.pem"),
		ready:  make(chan struct{}), done: make(chan struct{}),
	}
	l := &loop{
		fetch: httpapi.NewGateConfigClient(cp.srv.URL+"/internal/v1/gate/config", testToken),
		proxy: e.proxy, caFile: e.caFile, interval: interval, log: log,
		firstRetry: time.Millisecond, maxRetry: 4 * time.Millisecond,
		ready: func() {
			// The CA file is complete before anyone is told the gate is
			// ready.
			b, err := os.ReadFile(e.caFile)
			require.NoError(t, err)
			require.Equal(t, e.proxy.CACertPEM(), b)
			close(e.ready)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		defer close(e.done)
		l.run(ctx)
	}()
	t.Cleanup(e.stop)
	return e
}

// stop ends the loop and waits for it.
func (e *loopEnv) stop() {
	e.cancel()
	<-e.done
}

func (e *loopEnv) awaitReady(t *testing.T) {
	t.Helper()
	select {
	case <-e.ready:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the gate never became ready")
	}
}

func (e *loopEnv) isReady() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

func TestLoopFirstSuccess(t *testing.T) {
	t.Parallel()
	cp := newControlPlane(t, answer{200, configBody(t, "a.example")})
	e := startLoop(t, cp, 5*time.Millisecond)
	e.awaitReady(t)
	e.stop()
	applied := e.proxy.applied()
	require.NotEmpty(t, applied)
	require.Equal(t, []string{"a.example"}, applied[0].Networking.AllowedHosts)
	require.Equal(t, testSecretValue, applied[0].Credentials[0].Secret.Reveal())
	fi, err := os.Stat(e.caFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	// No temporary file is left beside it.
	entries, err := os.ReadDir(filepath.Dir(e.caFile))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Contains(t, e.logs.String(), `"msg":"gate ready"`)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, a := range cp.auth {
		require.Equal(t, "Bearer "+testToken, a)
	}
}

func TestLoopRetriesUntilFirstSuccess(t *testing.T) {
	t.Parallel()
	good := configBody(t, "a.example")
	cp := newControlPlane(t,
		answer{500, nil}, answer{503, nil}, answer{200, []byte("{not json")}, answer{200, good})
	// An hour's interval: only the quick retries before the first success
	// can get there in time.
	e := startLoop(t, cp, time.Hour)
	e.awaitReady(t)
	e.stop()
	// Three failures, then the good one: each retried quickly (the fetch
	// interval is not waited before the first success).
	require.GreaterOrEqual(t, cp.requests(), 4)
	require.Len(t, e.proxy.applied(), 1)
	require.Contains(t, e.logs.String(), "gate config fetch failed")
	require.Contains(t, e.logs.String(), "gate config refused")
}

func TestLoopKeepsLastGoodConfig(t *testing.T) {
	t.Parallel()
	a, b := configBody(t, "a.example"), configBody(t, "b.example")
	bad := configBody(t, "*.*.bad") // well-formed JSON the policy refuses
	cp := newControlPlane(t,
		answer{200, a}, answer{200, []byte(`{"networking":`)}, answer{500, []byte("boom")},
		answer{200, bad}, answer{404, nil}, answer{200, a}, answer{200, b})
	e := startLoop(t, cp, 5*time.Millisecond)
	// The 8th request proves the 7th answer was handled.
	cp.await(8)
	e.stop()
	require.True(t, e.isReady())
	require.False(t, e.proxy.isRevoked())
	var hosts []string
	for _, c := range e.proxy.applied() {
		hosts = append(hosts, c.Networking.AllowedHosts[0])
	}
	// Only good configs reached the proxy; an unchanged one is not
	// re-applied; the refused one (*.*.bad) was offered and rejected.
	require.Equal(t, []string{"a.example", "b.example"}, hosts)
	require.Equal(t, 3, strings.Count(strings.Join(e.rec.list(), ","), "setconfig"))
}

func TestLoopRevokedAfterReady(t *testing.T) {
	t.Parallel()
	cp := newControlPlane(t, answer{200, configBody(t, "a.example")}, answer{401, nil})
	e := startLoop(t, cp, 5*time.Millisecond)
	e.awaitReady(t)
	select {
	case <-e.done: // the loop returned by itself: it fetches no more
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the loop kept running after 401")
	}
	require.Equal(t, 2, cp.requests())
	require.True(t, e.proxy.isRevoked())
	require.Contains(t, e.logs.String(), "gate token revoked")
}

func TestLoopRevokedBeforeReady(t *testing.T) {
	t.Parallel()
	cp := newControlPlane(t, answer{500, nil}, answer{401, nil})
	e := startLoop(t, cp, 5*time.Millisecond)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the loop kept running after 401")
	}
	require.Equal(t, 2, cp.requests())
	require.True(t, e.proxy.isRevoked())
	require.False(t, e.isReady())
	_, err := os.Stat(e.caFile)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoopCAFileUnwritable(t *testing.T) {
	t.Parallel()
	// The CA file's directory is missing: never ready, and the loop keeps
	// retrying at the quick cadence.
	cp2 := newControlPlane(t, answer{200, configBody(t, "a.example")})
	log, logs := testLogger(t)
	l := &loop{
		fetch: httpapi.NewGateConfigClient(cp2.srv.URL+"/internal/v1/gate/config", testToken),
		proxy: newFakeProxy(&recorder{}), caFile: filepath.Join(t.TempDir(), "missing", "ca.pem"),
		interval: time.Hour, log: log, firstRetry: time.Millisecond, maxRetry: time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(ctx)
	}()
	cp2.await(3) // retried at the quick cadence, not the hour
	cancel()
	<-done
	require.False(t, l.isReady)
	require.Contains(t, logs.String(), "gate not ready")
}
