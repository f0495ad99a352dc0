//go:build integration

package e2e_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// sqliteSettings points an executor at a SQLite store in dir.
func sqliteSettings(dir string) map[string]string {
	return map[string]string{"SANDGATE_DATABASE_URL": "sqlite://" + filepath.Join(dir, "sandgate.db")}
}

// TestKill9MidExec: an executor SIGKILLed in the middle of an exec; a new
// process on the same database finds the session and runs commands in it.
func TestKill9MidExec(t *testing.T) {
	w := newWorld(t)
	settings := sqliteSettings(t.TempDir())
	first := w.start(t, "first", settings)
	c := first.client(t)
	ctx := ctxMinutes(t, 3)
	sid := domain.NewID("ses")
	info, err := c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)

	// One command with a deadline, one without: both outlive no caller.
	execErr := make(chan error, 2)
	for i, timeout := range []time.Duration{5 * time.Minute, 0} {
		go func() {
			cmd := fmt.Sprintf("touch started%d && sleep 412%d & sleep 412%d", i, i, i)
			_, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: cmd, Timeout: timeout})
			execErr <- err
		}()
	}
	for i := range 2 {
		require.Eventually(t, func() bool {
			rc, _, err := c.ReadFile(ctx, sid, fmt.Sprintf("/workspace/started%d", i), 0)
			if err == nil {
				_ = rc.Close()
			}
			return err == nil
		}, time.Minute, 100*time.Millisecond, "exec %d started", i)
	}
	first.kill(t)
	for range 2 {
		require.Error(t, <-execErr, "the exec's caller sees the executor die")
	}

	second := w.start(t, "second", settings)
	c = second.client(t)
	got, err := c.Get(ctx, sid)
	require.NoError(t, err, "the new executor finds the session")
	require.Equal(t, info.SandboxID, got.SandboxID)
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: "echo still here", Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "still here\n", res.Stdout)
	// Issue 11 item 5: the dead executor's commands died with it — the
	// engine ended their stdin, and the wrapper's watchdog killed them.
	// The scan's own text must not match itself: "412" is split.
	scan := `n=41; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f"; echo; done 2>/dev/null | grep -c "sleep ${n}2[01]" || true`
	require.Eventually(t, func() bool {
		res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: scan, Timeout: time.Minute})
		require.NoError(t, err)
		return strings.TrimSpace(res.Stdout) == "0"
	}, 10*time.Second, 200*time.Millisecond, "the killed executor's commands still run")
	again, err := c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	require.Equal(t, info.SandboxID, again.SandboxID, "a re-provision adopts the same sandbox")
	require.NoError(t, c.Delete(ctx, sid, false))
}

// tempName is CONTRACT §0's temporary write name, or a bulk write's
// bookkeeping file beside it in the workdir (.manifest, .dirs).
var tempName = regexp.MustCompile(`/\.sandgate-write-[0-9a-f]{16}(\.manifest|\.dirs)?$`)

// TestKill9MidWrite: an executor SIGKILLed in the middle of a streamed
// write and in the middle of a bulk write; after a restart no target is
// half-written — each holds its old bytes, or is absent, or is complete —
// and whatever the killed transfer left behind carries the temporary name
// (CONTRACT §0), never a target's.
func TestKill9MidWrite(t *testing.T) {
	w := newWorld(t)
	settings := sqliteSettings(t.TempDir())
	ctx := ctxMinutes(t, 4)
	p := w.start(t, "first", settings)
	c := p.client(t)
	sid := domain.NewID("ses")
	_, err := c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)

	// A streamed write of 64 MiB over an existing file, cut after half.
	old := []byte("the old content\n")
	require.NoError(t, c.WriteFile(ctx, sid, "/workspace/stream.bin", bytes.NewReader(old), int64(len(old))))
	payload := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	half := make(chan struct{})
	writeErr := make(chan error, 1)
	died := p.done
	go func() {
		src := &cutReader{r: bytes.NewReader(payload), at: int64(len(payload) / 2), reached: half, stop: died}
		writeErr <- c.WriteFile(ctx, sid, "/workspace/stream.bin", src, int64(len(payload)))
	}()
	select {
	case <-half:
	case err := <-writeErr:
		t.Fatalf("the stream ended before the kill: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // let the first half travel into the sandbox
	p.kill(t)
	require.Error(t, <-writeErr)

	p = w.start(t, "second", settings)
	c = p.client(t)
	require.Equal(t, old, readAll(t, c, sid, "/workspace/stream.bin"), "the target keeps its old bytes")

	// A bulk write of 48 files of 1 MiB, killed once the server has the
	// whole body (the batch is read before delivery starts).
	files := make([]sandbox.FileWrite, 48)
	for i := range files {
		files[i] = sandbox.FileWrite{Path: fmt.Sprintf("/workspace/bulk/f%02d", i),
			Data: bytes.Repeat([]byte{byte('a' + i%26)}, 1<<20)}
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.Path, Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(f.Data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	sent := make(chan struct{})
	go func() {
		src := &cutReader{r: bytes.NewReader(archive.Bytes()), at: int64(archive.Len()), reached: sent, stop: ctx.Done()}
		writeErr <- c.WriteArchive(ctx, sid, "", src)
	}()
	select {
	case <-sent:
	case err := <-writeErr:
		t.Fatalf("the batch ended before the kill: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	p.kill(t)
	err = <-writeErr
	t.Logf("the killed batch call returned %v", err)

	p = w.start(t, "third", settings)
	c = p.client(t)
	landed := 0
	for _, f := range files {
		rc, _, err := c.ReadFile(ctx, sid, f.Path, 0)
		if errors.Is(err, sandbox.ErrFileNotExist) {
			continue
		}
		require.NoError(t, err, f.Path)
		got, err := io.ReadAll(rc)
		require.NoError(t, rc.Close())
		require.NoError(t, err)
		require.Equal(t, f.Data, got, "%s is absent or complete", f.Path)
		landed++
	}
	res, err := c.Exec(ctx, sid, sandbox.ExecRequest{Command: "find /workspace /tmp -name '.sandgate-write-*'", Timeout: time.Minute})
	require.NoError(t, err)
	residue := strings.Fields(res.Stdout)
	for _, name := range residue {
		require.Regexp(t, tempName, name, "only temporary names are left behind")
	}
	t.Logf("after the kill: %d of %d batch members landed, %d temporary files left", landed, len(files), len(residue))

	// Issue 11: the next PUT sweeps what the kills left, once it is stale.
	// Stale is an age (sandbox.DefaultStaleTempAge): the test ages the
	// residue instead of waiting, and puts a fresh temporary beside it, as
	// a concurrent write would have: that one stays.
	require.NotEmpty(t, residue, "the kills left temporaries to sweep")
	live := "/workspace/" + sandbox.TempPrefix + "00000000000000ff"
	_, err = c.Exec(ctx, sid, sandbox.ExecRequest{Timeout: time.Minute,
		Command: "find /workspace /tmp -name '.sandgate-write-*' -exec touch -d '-1 hour' {} + && : >" + live})
	require.NoError(t, err)
	_, err = c.Provision(ctx, sid, session.Request{})
	require.NoError(t, err)
	res, err = c.Exec(ctx, sid, sandbox.ExecRequest{Command: "find / -xdev -name '.sandgate-write-*'", Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, []string{live}, strings.Fields(res.Stdout), "only the live temporary is left")
	require.NoError(t, c.Delete(ctx, sid, false))
}

// cutReader reads r up to offset at, closes reached, and then blocks: the
// transfer stays open until the executor dies. At the end of r
// it also closes reached and returns EOF. stop ends the wait (the
// executor's death: the HTTP transport waits for the body's reader before
// it reports the broken connection).
type cutReader struct {
	r       *bytes.Reader
	at      int64
	n       int64
	reached chan struct{}
	stop    <-chan struct{}
	closed  bool
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n >= c.at {
		if !c.closed {
			c.closed = true
			close(c.reached)
		}
		if c.r.Len() == 0 {
			return 0, io.EOF
		}
		<-c.stop // the connection dies with the executor first
		return 0, io.ErrClosedPipe
	}
	if rest := c.at - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func readAll(t *testing.T, c *httpapi.Client, sid domain.ID, path string) []byte {
	t.Helper()
	rc, _, err := c.ReadFile(t.Context(), sid, path, 0)
	require.NoError(t, err)
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}
