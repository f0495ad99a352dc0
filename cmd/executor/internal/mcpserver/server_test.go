package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is an MCP client session connected in memory to a server over the
// real HTTP API and client, in front of a recording fake service.
type env struct {
	svc *portfake.Service
	cs  *mcp.ClientSession
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	svc := portfake.NewService()
	api := httptest.NewServer(httpapi.NewAPIHandler(svc, httpapi.APIOptions{Token: "tok"}))
	t.Cleanup(api.Close)
	cl, err := httpapi.NewClient(api.URL, "tok", nil)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := New(cl, opts).Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return &env{svc: svc, cs: cs}
}

// call calls a tool and decodes its structured result into out; it
// returns the error text when the tool failed.
func (e *env) call(t *testing.T, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	if res.IsError {
		require.Len(t, res.Content, 1)
		return res.Content[0].(*mcp.TextContent).Text
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, out))
	}
	return ""
}

func TestTools(t *testing.T) {
	e := newEnv(t, Options{})
	res, err := e.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
		require.NotNil(t, tool.InputSchema, tool.Name)
	}
	require.ElementsMatch(t, []string{"create_sandbox", "exec", "list_sandboxes", "delete_sandbox",
		"read_file", "write_file", "list_files", "export_workspace"}, names)
}

func TestCreate(t *testing.T) {
	gh := session.Credential{ID: "gh", Name: "GH_TOKEN", Secret: gatewire.NewSecret("s3cret-value"),
		AllowedHosts: []string{"api.github.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders}}
	e := newEnv(t, Options{Credentials: []session.Credential{gh}, DefaultImage: "img:default"})

	var out SessionOut
	require.Empty(t, e.call(t, "create_sandbox", map[string]any{"session_id": "s1",
		"allowed_hosts": []string{"api.github.com"}, "credentials": []string{"gh"}}, &out))
	require.Equal(t, "s1", out.SessionID)
	require.True(t, out.Gated)
	req := e.svc.Request()
	require.Equal(t, "img:default", req.Image)
	require.Equal(t, domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.github.com"}}, req.Networking)
	require.Equal(t, []session.Credential{gh}, req.Credentials, "the secret comes from the server, by id")

	// Without allowed_hosts a sandbox has no network, not an open one.
	require.Empty(t, e.call(t, "create_sandbox", map[string]any{}, &out))
	require.True(t, strings.HasPrefix(out.SessionID, "ses_"), out.SessionID)
	require.Equal(t, domain.Networking{Type: domain.NetLimited}, e.svc.Request().Networking)

	for name, c := range map[string]struct {
		args map[string]any
		want string
	}{
		"unknown credential": {map[string]any{"credentials": []string{"aws"}}, `invalid_argument: no credential "aws" on this server (it has: gh)`},
		"unrestricted":       {map[string]any{"unrestricted_network": true}, "not permitted"},
		"both":               {map[string]any{"unrestricted_network": true, "allowed_hosts": []string{"a.example"}}, "not both"},
		"bad id":             {map[string]any{"session_id": "Bad-Id"}, "invalid_argument"},
		"bad env":            {map[string]any{"env": map[string]string{"1X": "v"}}, "invalid_argument"},
	} {
		msg := e.call(t, "create_sandbox", c.args, nil)
		require.Contains(t, msg, c.want, name)
		require.NotContains(t, msg, "s3cret", name)
	}

	open := newEnv(t, Options{AllowUnrestricted: true})
	require.Empty(t, open.call(t, "create_sandbox", map[string]any{"unrestricted_network": true}, &out))
	require.Equal(t, domain.NetUnrestricted, open.svc.Request().Networking.Type)
}

func TestExec(t *testing.T) {
	e := newEnv(t, Options{MaxOutputBytes: 20})
	e.svc.ExecResult = sandbox.ExecResult{Stdout: "0123456789abcdefghijklmnopqrstuvwxyz", Stderr: "warn", ExitCode: 2}
	var out ExecOut
	require.Empty(t, e.call(t, "exec", map[string]any{"session_id": "s1", "command": "make"}, &out))
	require.Equal(t, 2, out.ExitCode)
	require.Equal(t, "warn", out.Stderr)
	require.True(t, out.Truncated)
	require.Equal(t, "0123456789\n[… 16 bytes left out …]\nqrstuvwxyz", out.Stdout)
	got := e.svc.ExecRequest()
	require.Equal(t, "make", got.Command)
	require.Equal(t, DefaultExecTimeoutSeconds*time.Second, got.Timeout)

	e.svc.ExecResult = sandbox.ExecResult{ExitCode: -1, TimedOut: true}
	out = ExecOut{}
	require.Empty(t, e.call(t, "exec", map[string]any{"session_id": "s1", "command": "sleep 9", "timeout_seconds": 1}, &out))
	require.Equal(t, ExecOut{ExitCode: 124, TimedOut: true}, out)

	require.Contains(t, e.call(t, "exec", map[string]any{"session_id": "s1", "command": "x", "timeout_seconds": 3601}, nil), "timeout_seconds")
	require.Contains(t, e.call(t, "exec", map[string]any{"session_id": "../x", "command": "x"}, nil), "invalid_argument")
	e.svc.Err = sandbox.ErrNotFound
	require.Contains(t, e.call(t, "exec", map[string]any{"session_id": "s1", "command": "x"}, nil), "exec failed: not_found")
}

func TestFiles(t *testing.T) {
	e := newEnv(t, Options{MaxOutputBytes: 8})
	sid := domain.MustParseSessionID("s1")
	var w WriteOut
	require.Empty(t, e.call(t, "write_file", map[string]any{"session_id": "s1", "path": "/w/a.txt", "content": "héllo"}, &w))
	require.Equal(t, WriteOut{Path: "/w/a.txt", Bytes: 6}, w)
	require.Equal(t, []byte("héllo"), e.svc.File(sid, "/w/a.txt"))
	require.Empty(t, e.call(t, "write_file", map[string]any{"session_id": "s1", "path": "/w/b", "content": "AP8=", "encoding": "base64"}, &w))
	require.Equal(t, []byte{0, 0xff}, e.svc.File(sid, "/w/b"))
	require.Contains(t, e.call(t, "write_file", map[string]any{"session_id": "s1", "path": "/w/b", "content": "!", "encoding": "base64"}, nil), "not base64")
	require.Contains(t, e.call(t, "write_file", map[string]any{"session_id": "s1", "path": "/w/b", "content": "x", "encoding": "latin1"}, nil), "invalid_argument")

	var r ReadOut
	require.Empty(t, e.call(t, "read_file", map[string]any{"session_id": "s1", "path": "/w/a.txt"}, &r))
	require.Equal(t, ReadOut{Content: "héllo", Encoding: "utf-8", Size: 6}, r)
	require.Empty(t, e.call(t, "read_file", map[string]any{"session_id": "s1", "path": "/w/b"}, &r))
	require.Equal(t, ReadOut{Content: "AP8=", Encoding: "base64", Size: 2}, r)
	// A cut that splits a rune keeps the text a text.
	e.svc.Put(sid, "/w/long", []byte("abcdefgé and more"))
	require.Empty(t, e.call(t, "read_file", map[string]any{"session_id": "s1", "path": "/w/long"}, &r))
	require.Equal(t, ReadOut{Content: "abcdefg", Encoding: "utf-8", Size: 18, Truncated: true}, r)
	require.Contains(t, e.call(t, "read_file", map[string]any{"session_id": "s1", "path": "/w/none"}, nil), "read_file failed: file_not_exist")

	e.svc.Listing = []sandbox.FileInfo{{Name: "a.txt", Type: sandbox.TypeFile, Size: 6, Mode: 0o644}}
	var l ListFilesOut
	require.Empty(t, e.call(t, "list_files", map[string]any{"session_id": "s1", "path": "/w"}, &l))
	require.Equal(t, []Entry{{Name: "a.txt", Type: "file", Size: 6, Mode: "0644", ModTime: "0001-01-01T00:00:00Z"}}, l.Entries)
}

func TestExport(t *testing.T) {
	e := newEnv(t, Options{MaxExportBytes: 16})
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "export_workspace",
		Arguments: map[string]any{"session_id": "s1", "root": "/w"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 2)
	blob := res.Content[1].(*mcp.EmbeddedResource).Resource
	require.Equal(t, "sandgate://sessions/s1/export.tar", blob.URI)
	require.Equal(t, []byte("tar:/w"), blob.Blob)

	require.Contains(t, e.call(t, "export_workspace", map[string]any{"session_id": "s1", "root": "/a/much/longer/root"}, nil), "file_too_large")

	// Without a root, the session's workdir (portfake.Info: /workspace).
	res, err = e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "export_workspace", Arguments: map[string]any{"session_id": "s1"}})
	require.NoError(t, err)
	require.Equal(t, []byte("tar:/workspace"), res.Content[1].(*mcp.EmbeddedResource).Resource.Blob)
}

func TestResource(t *testing.T) {
	e := newEnv(t, Options{MaxOutputBytes: 8})
	sid := domain.MustParseSessionID("s1")
	e.svc.Put(sid, "/w/my file", []byte("text"))
	e.svc.Put(sid, "/w/bin", []byte{0xff})
	e.svc.Put(sid, "/w/big", []byte("0123456789"))
	ctx := context.Background()
	res, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandgate://sessions/s1/files/w/my%20file"})
	require.NoError(t, err)
	require.Equal(t, "text", res.Contents[0].Text)
	res, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandgate://sessions/s1/files/w/bin"})
	require.NoError(t, err)
	require.Equal(t, []byte{0xff}, res.Contents[0].Blob)
	_, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandgate://sessions/s1/files/w/big"})
	require.ErrorContains(t, err, "file_too_large")
	_, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandgate://sessions/Bad/files/w"})
	require.Error(t, err)
}

func TestListAndDelete(t *testing.T) {
	e := newEnv(t, Options{})
	e.svc.Infos = append(e.svc.Infos, portfake.Info(domain.MustParseSessionID("s1")))
	var l ListOut
	require.Empty(t, e.call(t, "list_sandboxes", map[string]any{}, &l))
	require.Equal(t, []SessionOut{{SessionID: "s1", Image: "img:1", Workdir: "/workspace", Network: "limited",
		AllowedHosts: []string{"api.example.com"}, Gated: true, State: "running"}}, l.Sandboxes)
	var d DeletedOut
	require.Empty(t, e.call(t, "delete_sandbox", map[string]any{"session_id": "s1"}, &d))
	require.Equal(t, "s1", d.Deleted)
	require.Equal(t, []bool{false}, e.svc.Deleted())
}

func TestClipMiddle(t *testing.T) {
	s, cut := clipMiddle("short", 10)
	require.False(t, cut)
	require.Equal(t, "short", s)
	// Rune boundaries: é is two bytes, never split.
	s, cut = clipMiddle("ééééé", 5)
	require.True(t, cut)
	require.Equal(t, "é\n[… 6 bytes left out …]\né", s)
}
