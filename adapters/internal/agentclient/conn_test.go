package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// fakeAgent serves handler over yamux the way cmd/agent does, for the
// states a real agent cannot be forced into on cue: a report that never
// comes, a stream cut mid-call. cmd/agent's own tests and the conformance
// suite cover the real one.
type fakeAgent struct {
	handler http.Handler
	opened  atomic.Int32
	mu      sync.Mutex
	ends    []net.Conn // the agent side of each opened stream
	wg      sync.WaitGroup
}

func (f *fakeAgent) open(context.Context) (io.ReadWriteCloser, error) {
	f.opened.Add(1)
	client, agent := net.Pipe()
	f.mu.Lock()
	f.ends = append(f.ends, agent)
	f.mu.Unlock()
	s, err := yamux.Server(agent, yamuxConfig())
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: f.handler, ReadHeaderTimeout: time.Second}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); _ = srv.Serve(s) }()
	return client, nil
}

// cut drops every stream, as an agent killed by its command would.
func (f *fakeAgent) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.ends {
		_ = c.Close()
	}
}

func newFake(t *testing.T, h http.HandlerFunc) (*fakeAgent, *Conn) {
	// The body is read first, as the agent does: net/http notices a caller
	// gone (and ends the request's context) only once it has.
	f := &fakeAgent{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h(w, r)
	})}
	c := New(f.open)
	t.Cleanup(func() {
		_ = c.Close()
		f.cut()
		f.wg.Wait()
	})
	return f, c
}

func events(w http.ResponseWriter, evs ...agentwire.ExecEvent) {
	enc := json.NewEncoder(w)
	for _, ev := range evs {
		_ = enc.Encode(ev)
		w.(http.Flusher).Flush()
	}
}

func TestExecResultFromReport(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		var req agentwire.ExecRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		events(w, agentwire.ExecEvent{Pid: 42}, agentwire.ExecEvent{Stdout: []byte(req.Command + "\xff")},
			agentwire.ExecEvent{Stderr: []byte("e")}, agentwire.ExecEvent{Exit: &agentwire.ExecExit{Code: 3, FinishedMillis: 5}})
	})
	res, err := c.Exec(t.Context(), sandbox.ExecRequest{Command: "hi"}, ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, sandbox.ExecResult{Stdout: "hi\xff", Stderr: "e", ExitCode: 3}, res)
}

// TestExecLateReportIsEnforced: an agent that stops reporting (stopped by
// its command) is overruled by this side's clock: the group is killed from
// outside at deadline + EnforceGrace and the call returns TimedOut by
// deadline + ReturnGrace.
func TestExecLateReportIsEnforced(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, agentwire.ExecEvent{Pid: 7}, agentwire.ExecEvent{Stdout: []byte("partial")})
		<-r.Context().Done()
	})
	var killed atomic.Int32
	start := time.Now()
	res, err := c.Exec(t.Context(), sandbox.ExecRequest{Command: "x", Timeout: time.Second},
		ExecOptions{KillGroup: func(_ context.Context, pid int) { killed.Store(int32(pid)) }})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, sandbox.ExitKilled, res.ExitCode)
	require.Equal(t, "partial", res.Stdout)
	require.EqualValues(t, 7, killed.Load())
	require.Less(t, time.Since(start), time.Second+sandbox.ReturnGrace+time.Second)
}

// TestExecLostStreamIsNoResult: a stream cut before the report is ErrLost,
// never a result; the next call starts a fresh agent.
func TestExecLostStreamIsNoResult(t *testing.T) {
	var f *fakeAgent
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == agentwire.PathStat {
			_ = json.NewEncoder(w).Encode(agentwire.FileInfo{Name: "/", Type: agentwire.TypeDir})
			return
		}
		events(w, agentwire.ExecEvent{Pid: 9}, agentwire.ExecEvent{Stdout: []byte("0")})
		go f.cut()
		<-r.Context().Done()
	})
	var killed atomic.Int32
	_, err := c.Exec(t.Context(), sandbox.ExecRequest{Command: "x"},
		ExecOptions{KillGroup: func(_ context.Context, pid int) { killed.Store(int32(pid)) }})
	require.ErrorIs(t, err, ErrLost)
	require.EqualValues(t, 9, killed.Load(), "a lost agent's command is killed from outside")
	fi, err := c.Stat(t.Context(), "/")
	require.NoError(t, err)
	require.Equal(t, sandbox.TypeDir, fi.Type)
	require.EqualValues(t, 2, f.opened.Load(), "the next call re-opens the agent")
}

func TestExecCancelIsTheCallersError(t *testing.T) {
	started := make(chan struct{})
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, agentwire.ExecEvent{Pid: 9})
		close(started)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err := c.Exec(ctx, sandbox.ExecRequest{Command: "x"}, ExecOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestFileErrorsAreSentinels(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(agentwire.Error{Code: agentwire.CodeFileNotExist, Message: "no", Path: r.URL.Query().Get("path")})
	})
	_, err := c.ReadFile(t.Context(), "/w/missing")
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
	require.Contains(t, err.Error(), "/w/missing")
	_, err = c.ReadFile(t.Context(), "relative")
	require.Error(t, err)
	require.NotErrorIs(t, err, sandbox.ErrFileNotExist, "refused before a byte travels")
}

// TestWriteSourceMismatchLandsNothing: a short or long source never hands
// the agent a complete body.
func TestWriteSourceMismatchLandsNothing(t *testing.T) {
	var got atomic.Int64
	var complete atomic.Bool
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		// Only a complete body is recorded: the handler of an aborted
		// write may still run after its call returned (a loaded machine),
		// and must not overwrite the next call's record.
		if err == nil && n == r.ContentLength {
			got.Store(n)
			complete.Store(true)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	for name, src := range map[string]string{"short": "abc", "long": "abcdefgh"} {
		complete.Store(false)
		err := c.WriteFileStream(t.Context(), "/w/f", stringsReader(src), 5)
		require.ErrorIs(t, err, sandbox.ErrSizeMismatch, name)
		require.False(t, complete.Load(), name)
	}
	require.NoError(t, c.WriteFileStream(t.Context(), "/w/f", stringsReader("abcde"), 5))
	require.True(t, complete.Load())
	require.EqualValues(t, 5, got.Load())
}

func stringsReader(s string) io.Reader { return &slowReader{s: s} }

// slowReader hands out one byte per Read, the worst case for exactReader.
type slowReader struct{ s string }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	p[0] = r.s[0]
	r.s = r.s[1:]
	return 1, nil
}

// blockingReader hands out half of its bytes, then blocks until released.
type blockingReader struct {
	left    int
	half    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if b.left <= 64<<10 {
		b.once.Do(func() { close(b.half) })
		<-b.release
	}
	n := min(len(p), b.left-64<<10)
	if n <= 0 {
		n = min(len(p), b.left)
	}
	b.left -= n
	return n, nil
}

// TestWriteCancelledReturns: a write whose source blocks returns at once
// when its caller cancels (the agent then sees a short body).
func TestWriteCancelledReturns(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	src := &blockingReader{left: 128 << 10, half: make(chan struct{}), release: make(chan struct{})}
	defer close(src.release)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.WriteFileStream(ctx, "/w/f", src, 128<<10) }()
	<-src.half
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(3 * time.Second):
		t.Fatal("a cancelled write did not return")
	}
}

// TestExecLostAgentFollowedToDeadline: a command that kills its agent and
// overruns is followed from outside to its deadline (TimedOut); one that
// ends inside it has no status left to report (an error, never a guess).
func TestExecLostAgentFollowedToDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		aliveFor time.Duration
		timedOut bool
	}{"overruns": {3 * time.Second, true}, "ends in time": {200 * time.Millisecond, false}} {
		t.Run(name, func(t *testing.T) {
			c := agentKilledAfterPid(t)
			start := time.Now()
			var killed atomic.Bool
			res, err := c.Exec(t.Context(), sandbox.ExecRequest{Command: "x", Timeout: time.Second}, ExecOptions{
				KillGroup: func(context.Context, int) { killed.Store(true) },
				GroupAlive: func(_ context.Context, pid int) (bool, error) {
					require.Equal(t, 11, pid)
					return !killed.Load() && time.Since(start) < tc.aliveFor, nil
				},
			})
			if !tc.timedOut {
				require.ErrorIs(t, err, ErrLost)
				require.False(t, killed.Load())
				return
			}
			require.NoError(t, err)
			require.True(t, res.TimedOut)
			require.True(t, killed.Load(), "killed from outside at deadline + EnforceGrace")
			require.Less(t, time.Since(start), time.Second+sandbox.ReturnGrace)
		})
	}
}

// agentKilledAfterPid is an agent that reports its command's pid, 11, and
// is then cut off (the command killed it).
func agentKilledAfterPid(t *testing.T) *Conn {
	var f *fakeAgent
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		events(w, agentwire.ExecEvent{Pid: 11})
		go f.cut()
		<-r.Context().Done()
	})
	return c
}

// TestExecLostAgentProbeFailures: a group probe that fails (the command
// killed it too) is asked again, and the command is still followed to its
// deadline; a probe that finds the sandbox gone ends the call at once.
func TestExecLostAgentProbeFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		probeErr error
		timedOut bool
	}{
		"probe killed": {errors.New("process group probe exited 137"), true},
		"sandbox gone": {fmt.Errorf("went away: %w", sandbox.ErrNotFound), false},
	} {
		t.Run(name, func(t *testing.T) {
			c := agentKilledAfterPid(t)
			start := time.Now()
			var killed atomic.Bool
			var probes atomic.Int32
			res, err := c.Exec(t.Context(), sandbox.ExecRequest{Command: "x", Timeout: time.Second}, ExecOptions{
				KillGroup: func(context.Context, int) { killed.Store(true) },
				GroupAlive: func(context.Context, int) (bool, error) {
					if probes.Add(1) <= 3 {
						return false, tc.probeErr
					}
					return !killed.Load(), nil
				},
			})
			if !tc.timedOut {
				require.ErrorIs(t, err, sandbox.ErrNotFound)
				require.Equal(t, int32(1), probes.Load(), "a gone sandbox is not asked again")
				return
			}
			require.NoError(t, err)
			require.True(t, res.TimedOut)
			require.True(t, killed.Load(), "killed from outside at deadline + EnforceGrace")
			require.Greater(t, probes.Load(), int32(3))
			require.Less(t, time.Since(start), time.Second+sandbox.ReturnGrace)
		})
	}
}

// stubPlane is a fallback data plane that answers every exec with exit 9.
type stubPlane struct{ DataPlane }

func (stubPlane) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{ExitCode: 9}, nil
}

// TestPlaneRoutesAndObserves: a sandbox without an agent takes the
// fallback, one with an agent the agent, and Observe is told which.
func TestPlaneRoutesAndObserves(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		events(w, agentwire.ExecEvent{Pid: 3}, agentwire.ExecEvent{Exit: &agentwire.ExecExit{Code: 4}})
	})
	var paths []bool
	p := Plane{Fallback: stubPlane{}, Observe: func(_ context.Context, agent bool) { paths = append(paths, agent) }}
	res, err := p.Exec(t.Context(), sandbox.ExecRequest{Command: "x"})
	require.NoError(t, err)
	require.Equal(t, 9, res.ExitCode)
	p.Conn = c
	res, err = p.Exec(t.Context(), sandbox.ExecRequest{Command: "x"})
	require.NoError(t, err)
	require.Equal(t, 4, res.ExitCode)
	require.Equal(t, []bool{false, true}, paths)
}
