//go:build integration

package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/proctest"
)

// procToken is the API token of every executor process these tests start.
const procToken = "e2e-process-api-token-0123"

// binDir holds the executor binary, built once per test run (TestMain
// removes it).
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := proctest.Run(m) // and no executor process outlives the tests
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// executorBinary builds cmd/executor from this tree, once.
func executorBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "sandgate-e2e-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "executor")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/sandgate/sandgate/cmd/executor").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build cmd/executor: %w\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// world is what executor processes of one test share: the engine, the test
// label their containers carry, a secrets key.
type world struct {
	cli    *client.Client
	labels map[string]string
	key    string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.RequireImage(t, cli, "debian:bookworm")
	key := make([]byte, session.KeyLen)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return &world{cli: cli, labels: dockertest.Labels(t, cli), key: hex.EncodeToString(key)}
}

// proc is one `executor serve` process.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string
	done chan struct{}

	mu  sync.Mutex
	log strings.Builder
}

// start runs `executor serve` with the world's labels and key, listening
// on a free loopback port, plus settings; it returns once the API listens.
// The process is stopped (SIGTERM, then SIGKILL) when the test ends, and
// its log is printed if the test failed.
func (w *world) start(t *testing.T, name string, settings map[string]string) *proc {
	t.Helper()
	var labels []string
	for k, v := range w.labels {
		labels = append(labels, k+"="+v)
	}
	env := append(os.Environ(),
		"SANDGATE_LISTEN=127.0.0.1:0", "SANDGATE_API_TOKEN="+procToken, "SANDGATE_SECRET_KEY="+w.key,
		"SANDGATE_DOCKER_LABELS="+strings.Join(labels, ","), "SANDGATE_GATE_IMAGE=", "SANDGATE_SHUTDOWN_TIMEOUT=5s",
		"SANDGATE_CHECKPOINT_DIR="+t.TempDir(),
		// The default database is ./.sandgate/sandgate.db, relative to the
		// package directory: every test would share one, and leave it in
		// the tree. settings may name another (the last value wins).
		"SANDGATE_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "sandgate.db"))
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(executorBinary(t), "serve")
	p.cmd.Env = env
	// The executor dies with the test binary, whatever kills it: an orphan
	// would keep its sandboxes busy and the fds it inherited (the heavy-test
	// lock of flock) open.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	listening := make(chan string, 1)
	go p.scan(bufio.NewScanner(stderr), listening)
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("log of executor %s:\n%s", p.name, p.logText())
		}
	})
	select {
	case addr := <-listening:
		p.url = "http://" + addr
	case <-p.done:
		t.Fatalf("executor %s exited before listening:\n%s", name, p.logText())
	case <-time.After(time.Minute):
		t.Fatalf("executor %s did not listen within a minute:\n%s", name, p.logText())
	}
	return p
}

// scan keeps the process's log and reports the API's address.
func (p *proc) scan(sc *bufio.Scanner, listening chan<- string) {
	defer close(p.done)
	defer func() { _ = p.cmd.Wait() }()
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.log.WriteString(line + "\n")
		p.mu.Unlock()
		var rec struct{ Msg, Server, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.Server == "api" {
			listening <- rec.Addr
		}
	}
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// client returns a Go client of the process's API.
func (p *proc) client(t *testing.T) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(p.url, procToken, nil)
	require.NoError(t, err)
	return c
}

// kill SIGKILLs the process and waits until it is gone.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("executor %s outlived SIGKILL by 30s", p.name)
	}
}

// stop ends the process if it still runs: SIGTERM, then SIGKILL.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ctxMinutes is a context for a test's calls, bounded by n minutes.
func ctxMinutes(t *testing.T, n int) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Duration(n)*time.Minute)
	t.Cleanup(cancel)
	return c
}
