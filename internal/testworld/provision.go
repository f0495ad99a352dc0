package testworld

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/docker"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Paths inside every sandbox Provision makes.
const (
	// ProbeInSandbox is the uploaded probe.
	ProbeInSandbox = "/tmp/probe"
	// OriginCAInSandbox is the origin's CA certificate, for rows that must
	// verify the origin's own leaf (an opaque tunnel).
	OriginCAInSandbox = "/tmp/origin-ca.pem"
)

// probeTimeout bounds one probe run inside the sandbox.
const probeTimeout = 60 * time.Second

// Provision registers a session with the policy and credentials, provisions
// its gated sandbox with GateImage and uploads the probe; the sandbox is
// reaped when the test ends. The sandbox's environment carries each
// credential's placeholder under the credential's Name.
func (e *Env) Provision(t *testing.T, networking domain.Networking, creds []session.Credential) (ports.Sandbox, domain.ID) {
	t.Helper()
	sb, sid, err := e.ProvisionWith(t, e.GateImage(t), networking, creds)
	require.NoError(t, err, "provision a gated sandbox")
	ctx, cancel := ctxFor(t)
	defer cancel()
	e.upload(ctx, t, sb, ProbeInSandbox, e.ProbePath)
	require.NoError(t, sb.WriteFile(ctx, OriginCAInSandbox, e.ca.certPEM))
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "chmod 755 " + ProbeInSandbox})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "chmod the probe: %s", res.Stderr)
	return sb, sid
}

// ProvisionWith registers the session and provisions it with gateImage,
// returning Provision's error (fail-closed rows expect one). Whatever it
// creates is reaped when the test ends.
func (e *Env) ProvisionWith(t *testing.T, gateImage string, networking domain.Networking, creds []session.Credential) (ports.Sandbox, domain.ID, error) {
	t.Helper()
	sid := domain.NewID("ses")
	e.Register(t, session.Session{ID: sid, Networking: networking, Credentials: creds})
	env := make(map[string]string, len(creds))
	for _, c := range creds {
		env[c.Name] = egress.Placeholder(sid, c.Name)
	}
	spec := sandbox.Spec{SessionID: sid, Image: e.SandboxImage, Networking: networking, Env: env, Isolation: e.Isolation,
		Gate: &sandbox.GateSpec{Image: gateImage, ControlplaneURL: e.ControlplaneURL,
			OTelEndpoint: e.Collector.Endpoint, OTelInsecure: true}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := e.Provider.Reap(ctx, sid); err != nil {
			t.Errorf("reap %s: %v", sid, err)
		}
	})
	ctx, cancel := ctxFor(t)
	defer cancel()
	sb, err := e.Provider.Provision(ctx, spec)
	return sb, sid, err
}

func (e *Env) upload(ctx context.Context, t *testing.T, sb ports.Sandbox, dst, src string) {
	t.Helper()
	uploadFile(ctx, t, sb, dst, src)
}

func uploadFile(ctx context.Context, t *testing.T, sb ports.Sandbox, dst, src string) {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, sb.WriteFileStream(ctx, dst, f, st.Size()), "upload %s", dst)
}

// Probe runs the probe inside the sandbox with args (each single-quoted
// for bash) and returns what it did.
func (e *Env) Probe(t *testing.T, sb ports.Sandbox, args ...string) sandbox.ExecResult {
	t.Helper()
	return RunProbe(t, sb, args...)
}

// Exec runs a bash command in the sandbox, bounded, and fails the test
// only on a transport error: exit codes are the rows' to assert.
func (e *Env) Exec(t *testing.T, sb ports.Sandbox, command string) sandbox.ExecResult {
	t.Helper()
	return Exec(t, sb, command)
}

// RunProbe runs the probe uploaded to ProbeInSandbox (UploadProbe) with
// args, each single-quoted for bash; any backend's sandbox.
func RunProbe(t *testing.T, sb ports.Sandbox, args ...string) sandbox.ExecResult {
	t.Helper()
	quoted := make([]string, 0, len(args)+1)
	quoted = append(quoted, ProbeInSandbox)
	for _, a := range args {
		quoted = append(quoted, ShellQuote(a))
	}
	return Exec(t, sb, strings.Join(quoted, " "))
}

// Exec runs a bash command in any backend's sandbox, bounded, and fails the
// test only on a transport error.
func Exec(t *testing.T, sb ports.Sandbox, command string) sandbox.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), probeTimeout+10*time.Second)
	defer cancel()
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: command, Timeout: probeTimeout})
	require.NoError(t, err, "exec %q", command)
	require.False(t, res.TimedOut, "exec %q timed out", command)
	return res
}

// UploadProbe builds the probe (static) and uploads it to ProbeInSandbox in
// sb, executable.
func UploadProbe(t *testing.T, sb ports.Sandbox) {
	t.Helper()
	ctx, cancel := ctxFor(t)
	defer cancel()
	uploadFile(ctx, t, sb, ProbeInSandbox, buildProbe(t, t.TempDir()))
	res := Exec(t, sb, "chmod 755 "+ProbeInSandbox)
	require.Equal(t, 0, res.ExitCode, "chmod the probe: %s", res.Stderr)
}

// ShellQuote single-quotes s for bash.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// GateLogs returns the session's gate container's logs (stdout and
// stderr).
func (e *Env) GateLogs(t *testing.T, sid domain.ID) string {
	t.Helper()
	return e.logs(t, docker.GateName(sid.String()))
}

// recordingTokens are the store's gate tokens (the provider's
// ports.GateTokenIssuer), remembering every token generated, so a row can
// assert that none appears where it must not.
type recordingTokens struct {
	*sessionstore.Store
	mu   sync.Mutex
	seen []string
}

func (m *recordingTokens) Generate() string {
	tok := m.Store.Generate()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, tok)
	return tok
}

func (m *recordingTokens) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

// RequireFamiliesNarrowed checks the probe's "families" result: the
// families the firewall governs (and unix, netlink) open, every other one —
// vsock above all, which reaches the host past any firewall — refused by
// the sandbox's seccomp profile (internal/seccomp) with EPERM.
func RequireFamiliesNarrowed(t *testing.T, res sandbox.ExecResult) {
	t.Helper()
	requireFamilies(t, res, "operation not permitted")
}

// RequireFamiliesNarrowedGVisor is RequireFamiliesNarrowed for a gVisor
// sandbox: its kernel, the Sentry, has no vsock, alg or tipc sockets at all
// (EAFNOSUPPORT, before any seccomp profile: runsc applies the OCI one only
// with --oci-seccomp) and refuses packet sockets without --net-raw (EPERM).
func RequireFamiliesNarrowedGVisor(t *testing.T, res sandbox.ExecResult) {
	t.Helper()
	requireFamilies(t, res, "address family not supported by protocol")
}

// requireFamilies: unix, inet and netlink open; vsock, alg and tipc
// refused with absent; packet sockets refused with EPERM (no NET_RAW).
func requireFamilies(t *testing.T, res sandbox.ExecResult, absent string) {
	t.Helper()
	require.Equal(t, 1, res.ExitCode, "stdout %q stderr %q", res.Stdout, res.Stderr)
	require.NotContains(t, res.Stdout, "vsock: opened")
	for _, f := range []string{"unix", "inet", "netlink"} {
		require.Contains(t, res.Stdout, f+": opened\n", "stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	for _, f := range []string{"vsock", "alg", "tipc"} {
		require.Contains(t, res.Stdout, f+": "+absent+"\n", "stdout %q", res.Stdout)
	}
	require.Contains(t, res.Stdout, "packet: operation not permitted\n", "stdout %q", res.Stdout)
}
