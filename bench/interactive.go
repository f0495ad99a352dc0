package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// interactiveRows are docs/PERFORMANCE.md's interactive rows: what a user
// of a live session waits for, through the executor's HTTP API over the
// agent. They have no raw-engine baseline (the engine streams too; the
// question is our latency), so they report a p50 against its target.
var interactiveRows = []rowSpec{
	{"exec-stream-first-byte", "p50<=20ms", onAgent(streamFirstByteRow)},
	{"pty-echo", "p50<=10ms", onAgent(ptyEchoRow)},
}

// streamFirstByteRow: a command prints a line (bash's own clock, a
// builtin: no fork) and sleeps; Ours is the p50 from the streaming
// request's start to the client's sink having that line. The note adds the
// p50 from the sandbox's write to the sink (the sandbox's clock is this
// host's), which is the streaming path alone, without the exec's start.
func streamFirstByteRow(ctx context.Context, e *env, b *box) (Row, error) {
	c, done, err := apiOver(ctx, b, e.image)
	if err != nil {
		return Row{}, err
	}
	defer done()
	n := e.iterations(30, 5)
	var toFirst, writeToSink []time.Duration
	for range n {
		first := &firstLine{}
		start := time.Now()
		res, err := c.Exec(ctx, b.sid, sandbox.ExecRequest{Command: "echo $EPOCHREALTIME; sleep 0.05", Output: first})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		if err != nil {
			return Row{}, fmt.Errorf("exec:stream: %w", err)
		}
		written, err := parseEpoch(first.text())
		if err != nil {
			return Row{}, err
		}
		toFirst = append(toFirst, first.at.Sub(start))
		writeToSink = append(writeToSink, first.at.Sub(written))
	}
	p50 := median(toFirst)
	return Row{Ours: p50.Round(10 * time.Microsecond).String(), Baseline: "-",
		Note: fmt.Sprintf("p50 from the request (target <=20ms); the sandbox's write to the client's sink p50 %s",
			median(writeToSink).Round(10*time.Microsecond)),
		extraMiss: p50 > 20*time.Millisecond}, nil
}

// apiOver serves the executor's HTTP API over b's provider (SQLite store,
// in-process server, image the default) and returns a client; done stops it all.
func apiOver(ctx context.Context, b *box, image string) (*httpapi.Client, func(), error) {
	dir, err := os.MkdirTemp("", "sandgate-bench-api-")
	if err != nil {
		return nil, nil, err
	}
	key := make([]byte, session.KeyLen)
	_, _ = rand.Read(key)
	store, err := sessionstore.OpenSQLite(ctx, filepath.Join(dir, "api.db"), key)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	srv := httptest.NewServer(httpapi.NewAPIHandler(executor.New(b.p, store, session.Defaults{Image: image}), httpapi.APIOptions{Token: benchAPIToken}))
	done := func() {
		srv.Close()
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}
	c, err := httpapi.NewClient(srv.URL, benchAPIToken, nil)
	if err != nil {
		done()
		return nil, nil, err
	}
	return c, done, nil
}

const benchAPIToken = "bench-api-token-0123"

// firstLine is an OutputSink keeping stdout's first piece and its arrival.
type firstLine struct {
	mu   sync.Mutex
	data string
	at   time.Time
}

func (f *firstLine) Output(stream sandbox.Stream, _ int64, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stream == sandbox.Stdout && f.at.IsZero() {
		f.data, f.at = string(data), time.Now()
	}
}

func (f *firstLine) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.data
}

// parseEpoch reads bash's $EPOCHREALTIME ("seconds.micros").
func parseEpoch(s string) (time.Time, error) {
	sec, frac, ok := strings.Cut(strings.TrimSpace(s), ".")
	us, err := strconv.ParseInt(frac, 10, 64)
	secs, err2 := strconv.ParseInt(sec, 10, 64)
	if !ok || err != nil || err2 != nil || len(frac) != 6 {
		return time.Time{}, fmt.Errorf("not an $EPOCHREALTIME: %q", s)
	}
	return time.Unix(secs, us*1000), nil
}

// ptyEchoRow: a keystroke sent over an attach (the API's WebSocket) to a
// proc on a PTY, until its echo (the terminal's own) comes back; Ours is
// the p50.
func ptyEchoRow(ctx context.Context, e *env, b *box) (Row, error) {
	c, done, err := apiOver(ctx, b, e.image)
	if err != nil {
		return Row{}, err
	}
	defer done()
	procs := c.Procs(b.sid)
	p, err := procs.StartProc(ctx, sandbox.ProcStart{Command: "exec cat >/dev/null", TTY: true})
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = procs.RemoveProc(context.WithoutCancel(ctx), p.ID) }()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	att, err := c.AttachProc(actx, b.sid, p.ID, 0)
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = att.Close() }()
	echoes := make(chan struct{}, 1)
	go func() {
		_, _ = att.Output(func(_ string, data []byte) error {
			for range data {
				select {
				case echoes <- struct{}{}:
				default:
				}
			}
			return nil
		})
	}()
	var took []time.Duration
	for range e.iterations(100, 10) {
		start := time.Now()
		if _, err := att.Write([]byte("x")); err != nil {
			return Row{}, err
		}
		select {
		case <-echoes:
		case <-time.After(10 * time.Second):
			return Row{}, fmt.Errorf("pty-echo: no echo within 10 s")
		}
		took = append(took, time.Since(start))
	}
	p50 := median(took)
	return Row{Ours: p50.Round(10 * time.Microsecond).String(), Baseline: "-",
		Note: "p50 keystroke to echo over the attach WebSocket (target <=10ms)", extraMiss: p50 > 10*time.Millisecond}, nil
}
