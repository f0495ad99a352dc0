package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/app/agent"
	"github.com/sandgate/sandgate/core/agentwire"
)

// TestCommandHeldUntilPidSent: a command runs only once its pid event is
// written out — one that kills its agent at once still leaves its pid
// with the provider, which then follows its group from outside. The pid
// event's write is held here; the command must not run meanwhile.
func TestCommandHeldUntilPidSent(t *testing.T) {
	t.Parallel()
	for name, noPtrace := range map[string]bool{"ptrace": false, "pipe": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "ran")
			srv := agent.New(agent.Options{Self: filepath.Join(binDir, "sandgate-agent"), NoPtrace: noPtrace})
			body, err := json.Marshal(agentwire.ExecRequest{Command: "touch " + marker})
			require.NoError(t, err)
			w := &heldWriter{header: http.Header{}, held: make(chan struct{}), go_: make(chan struct{})}
			done := make(chan struct{})
			go func() {
				defer close(done)
				srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, agentwire.PathExec, bytes.NewReader(body)))
			}()
			<-w.held
			time.Sleep(300 * time.Millisecond)
			require.NoFileExists(t, marker, "the command ran before its pid was sent")
			close(w.go_)
			<-done
			require.FileExists(t, marker)
			require.Contains(t, w.body.String(), `"pid":`)
		})
	}
}

// heldWriter is a streaming ResponseWriter whose first Flush (the pid
// event's) waits for go_.
type heldWriter struct {
	header http.Header
	body   bytes.Buffer
	mu     sync.Mutex
	once   sync.Once
	held   chan struct{}
	go_    chan struct{}
}

func (w *heldWriter) Header() http.Header { return w.header }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}
func (w *heldWriter) Flush() {
	w.once.Do(func() {
		close(w.held)
		<-w.go_
	})
}

// TestGatedUnreleasedNeverRuns: a held command whose agent never lets go
// (it died) ends without running.
func TestGatedUnreleasedNeverRuns(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	rd, wr, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, "sandgate-agent"), agent.GatedVerb, "touch "+marker)
	cmd.ExtraFiles = []*os.File{rd}
	require.NoError(t, cmd.Start())
	_ = rd.Close()
	_ = wr.Close() // the agent is gone: no byte ever comes
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 125, exit.ExitCode())
	require.NoFileExists(t, marker)
}

// TestInstall: the Kubernetes init step copies the binary whole, 0755.
func TestInstall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := exec.Command(filepath.Join(binDir, "sandgate-agent"), "install", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	want, err := os.ReadFile(filepath.Join(binDir, "sandgate-agent"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "sandgate-agent"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got))
	fi, err := os.Stat(filepath.Join(dir, "sandgate-agent"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary left")
}
