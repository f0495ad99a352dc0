package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

func TestLsPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mtime := time.Date(2026, 12, 3, 9, 5, 0, 0, time.UTC)
	h.svc.Listing = []sandbox.FileInfo{
		{Name: "bin", Type: sandbox.TypeDir, Size: 4096, Mode: 0o1777, ModTime: mtime},
		{Name: "evil\n\x1b[2Jname", Type: sandbox.TypeFile, Size: 12, Mode: 0o4755, ModTime: mtime},
		{Name: "fifo", Type: sandbox.TypeOther, Mode: 0o644, ModTime: mtime},
		{Name: "link", Type: sandbox.TypeSymlink, Size: 3, Mode: 0o777, ModTime: mtime, LinkTarget: "bin"},
	}
	r := h.run("ls", "s1:/w")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "drwxrwxrwt       4096 2026-12-03 09:05 bin\n"+
		`-rwsr-xr-x         12 2026-12-03 09:05 "evil\n\x1b[2Jname"`+"\n"+
		"?rw-r--r--          0 2026-12-03 09:05 fifo\n"+
		"lrwxrwxrwx          3 2026-12-03 09:05 link -> bin\n", r.stdout, "a hostile name cannot forge a line")
	r = h.run("ls", "--json", "s1:/w")
	require.Equal(t, 0, r.code, r.stderr)
	var got httpapi.FileList
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	infos, err := got.Infos()
	require.NoError(t, err)
	require.Equal(t, h.svc.Listing, infos)

	h.svc.Listing = nil // the fake's file_not_exist
	r = h.run("ls", "s1:/nope")
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor ls: /nope: no such file or directory in session s1\n", r.stderr)
	r = h.run("ls", "s1")
	require.Equal(t, ExitUsage, r.code, "a bare session is not a directory")
	r = h.run("ls", "s1", "/w")
	require.Equal(t, ExitUsage, r.code, "the path is glued to its session")
	r = h.run("ls", "Bad!:/w")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, []string{"ls s1 /w", "ls s1 /w", "ls s1 /nope"}, h.svc.Calls())
}

func TestStat(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.svc.Put(domain.MustParseSessionID("s1"), "/w/f", []byte("hello"))
	r := h.run("stat", "s1:/w/f")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "path      /w/f\ntype      file\nsize      5\nmode      0644 -rw-r--r--\n"+
		"modified  2026-01-02 03:04:05.000000000 UTC\n", r.stdout)
	r = h.run("stat", "s1:/w", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"name":"/w","type":"directory","size":4096,"mode":"0755","mod_time":"2026-01-02T03:04:05Z"}`, r.stdout)
	r = h.run("stat", "s1:/x")
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor stat: /x: no such file or directory in session s1\n", r.stderr)
	r = h.run("stat", "s1")
	require.Equal(t, ExitUsage, r.code)
}

func TestRmPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("rm", "-r", "s1:/w/d")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "removed /w/d from session s1\n", r.stdout)
	r = h.run("rm", "s1:/w/f", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"id":"s1","path":"/w/f","removed":true}`, r.stdout)
	r = h.run("rm", "-r", "s1")
	require.Equal(t, ExitUsage, r.code, "-r without a PATH would remove the session")
	r = h.run("rm", "--checkpoint", "s1:/w")
	require.Equal(t, ExitUsage, r.code)
	r = h.run("rm", "s1", "/w")
	require.Equal(t, ExitUsage, r.code, "a separate path is refused: it never means the session")
	require.Equal(t, []string{"rm s1 /w/d -r", "rm s1 /w/f"}, h.svc.Calls())

	h.svc.Err = sandbox.ErrIsDirectory
	r = h.run("rm", "s1:/w/d")
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor rm: /w/d is a non-empty directory in session s1 (rm -r removes it with everything under it)\n", r.stderr)
}

func TestMkdir(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run("mkdir", "-p", "s1:/w/a/b")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "made directory /w/a/b in session s1\n", r.stdout)
	r = h.run("mkdir", "s1:/w/c", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"id":"s1","path":"/w/c","made":true}`, r.stdout)
	require.Equal(t, []string{"mkdir s1 /w/a/b -p", "mkdir s1 /w/c"}, h.svc.Calls())

	h.svc.Err = sandbox.ErrIsDirectory
	r = h.run("mkdir", "s1:/w/c")
	require.Equal(t, ExitFailure, r.code)
	require.Equal(t, "executor mkdir: /w/c already exists in session s1 (mkdir -p accepts an existing directory)\n", r.stderr)
	r = h.run("mkdir", "s1")
	require.Equal(t, ExitUsage, r.code)
}
