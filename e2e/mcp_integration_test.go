//go:build integration

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
)

// mcpSecret is the credential's secret: it reaches `executor mcp` through
// its environment and must never show in what a model sees.
const mcpSecret = "mcp-e2e-secret-value-7f3a"

// mcpCredential names it by id; the model asks for "gh".
const mcpCredential = "id=gh,name=GH_TOKEN,secret-env=MCP_E2E_SECRET,hosts=api.example.com,locations=headers"

// mcpCommand is `executor mcp` against p, with the credential.
func mcpCommand(t *testing.T, p *proc, extra ...string) *exec.Cmd {
	cmd := exec.Command(executorBinary(t), append([]string{"mcp", "--credential", mcpCredential}, extra...)...)
	cmd.Env = append(os.Environ(), "SANDGATE_URL="+p.url, "SANDGATE_API_TOKEN="+procToken, "MCP_E2E_SECRET="+mcpSecret,
		"SANDGATE_MCP_TOKEN="+mcpHTTPToken)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

const mcpHTTPToken = "mcp-e2e-bearer-token-0123456789"

// TestMCP drives `executor mcp` with MCP clients against a real executor on
// Docker: the Go SDK's client over stdio and over streamable HTTP, and the
// TypeScript SDK's client (the npm package) over stdio. Each lists the
// tools, creates a gated sandbox with a credential by id, runs a command,
// writes, reads and lists a file, exports and deletes.
func TestMCP(t *testing.T) {
	w := newWorld(t)
	dockertest.RequireImage(t, w.cli, gatedImage())
	netName, gw := w.gateNetwork(t)
	settings := gatedSettings(t, netName, gw)
	settings["SANDGATE_AGENT_IMAGE"] = dockertest.AgentImage(t, w.cli)
	p := w.start(t, "mcp", settings)
	client := mcp.NewClient(&mcp.Implementation{Name: "sandgate-e2e", Version: "1"}, nil)

	t.Run("go-stdio", func(t *testing.T) {
		ctx := ctxMinutes(t, 4)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: mcpCommand(t, p)}, nil)
		require.NoError(t, err)
		defer func() { require.NoError(t, cs.Close()) }()
		mcpScenario(ctx, t, cs, "mcp_go_stdio")
	})

	t.Run("go-http", func(t *testing.T) {
		ctx := ctxMinutes(t, 4)
		endpoint := startMCPHTTP(t, p)
		resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no bearer token, no tools")

		hc := &http.Client{Transport: bearer{mcpHTTPToken}}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
		require.NoError(t, err)
		defer func() { require.NoError(t, cs.Close()) }()
		mcpScenario(ctx, t, cs, "mcp_go_http")
	})

	t.Run("typescript-stdio", func(t *testing.T) {
		dir := filepath.Join("testdata", "mcpclient")
		npm := requireNode(t)
		if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
			out, err := exec.Command(npm, "ci", "--prefix", dir, "--no-audit", "--no-fund").CombinedOutput()
			require.NoError(t, err, "npm ci:\n%s", out)
		}
		cmd := mcpCommand(t, p)
		node := exec.Command("node", filepath.Join(dir, "client.mjs"), cmd.Path)
		node.Env = append(cmd.Env, "MCP_SESSION_ID=mcp_ts_stdio")
		out, err := node.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "mcp client: ok")
		require.NotContains(t, string(out), mcpSecret)
	})
}

// mcpScenario is one client's round: every tool, a resource, and the
// credential's placeholder in place of its secret.
func mcpScenario(ctx context.Context, t *testing.T, cs *mcp.ClientSession, sid string) {
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 8)

	call := func(tool string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		require.NoError(t, err)
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		require.NotContains(t, text.String(), mcpSecret)
		require.False(t, res.IsError, "%s: %s", tool, text.String())
		out, _ := res.StructuredContent.(map[string]any)
		return out, res
	}

	created, _ := call("create_sandbox", map[string]any{"session_id": sid, "allowed_hosts": []string{"api.example.com"},
		"credentials": []string{"gh"}, "image": "debian:bookworm"})
	t.Cleanup(func() {
		_, _ = cs.CallTool(context.WithoutCancel(ctx), &mcp.CallToolParams{Name: "delete_sandbox", Arguments: map[string]any{"session_id": sid}})
	})
	require.Equal(t, true, created["gated"])
	require.Equal(t, "limited", created["network"])

	ran, _ := call("exec", map[string]any{"session_id": sid, "command": `printf %s "$GH_TOKEN"; echo err >&2; exit 3`})
	require.EqualValues(t, 3, ran["exit_code"])
	require.NotEmpty(t, ran["stdout"], "the sandbox sees a placeholder")
	require.Equal(t, "err\n", ran["stderr"])

	big, _ := call("exec", map[string]any{"session_id": sid, "command": "head -c 200000 /dev/zero | tr '\\0' x"})
	require.Equal(t, true, big["truncated"])
	require.Contains(t, big["stdout"], "bytes left out")

	timed, _ := call("exec", map[string]any{"session_id": sid, "command": "sleep 30", "timeout_seconds": 1})
	require.Equal(t, true, timed["timed_out"])
	require.EqualValues(t, 124, timed["exit_code"])

	call("write_file", map[string]any{"session_id": sid, "path": "/workspace/src/main.py", "content": "print('hi')\n"})
	read, _ := call("read_file", map[string]any{"session_id": sid, "path": "/workspace/src/main.py"})
	require.Equal(t, "print('hi')\n", read["content"])
	listed, _ := call("list_files", map[string]any{"session_id": sid, "path": "/workspace/src"})
	require.Len(t, listed["entries"], 1)

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandgate://sessions/" + sid + "/files/workspace/src/main.py"})
	require.NoError(t, err)
	require.Equal(t, "print('hi')\n", res.Contents[0].Text)

	_, exported := call("export_workspace", map[string]any{"session_id": sid})
	blob := exported.Content[1].(*mcp.EmbeddedResource).Resource.Blob
	require.Contains(t, tarNames(t, io.NopCloser(bytes.NewReader(blob))), "workspace/src/main.py")

	// A tool error is an answer the model reads, with the API's code.
	res2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"session_id": sid, "path": "/workspace/none"}})
	require.NoError(t, err)
	require.True(t, res2.IsError)
	require.Contains(t, res2.Content[0].(*mcp.TextContent).Text, "file_not_exist")

	deleted, _ := call("delete_sandbox", map[string]any{"session_id": sid})
	require.Equal(t, sid, deleted["deleted"])
	after, _ := call("list_sandboxes", map[string]any{})
	b, _ := json.Marshal(after)
	require.NotContains(t, string(b), sid)
}

// startMCPHTTP runs `executor mcp --http 127.0.0.1:0` and returns its
// endpoint; the process ends with the test.
func startMCPHTTP(t *testing.T, p *proc) string {
	cmd := mcpCommand(t, p, "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving streamable HTTP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("executor mcp --http did not listen within 30 s")
		return ""
	}
}

// bearer adds the MCP endpoint's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
