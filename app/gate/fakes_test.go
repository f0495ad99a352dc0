package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
)

var (
	testToken = gatewire.NewToken()
	testSID   = domain.NewID("ses")
)

// testSecretValue must never appear in a log.
const testSecretValue = "s3cr3t-value-never-logged"

// configBody is a valid gate config document allowing host.
func configBody(t *testing.T, host string) []byte {
	t.Helper()
	b, err := json.Marshal(gatewire.Config{
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{host}},
		Credentials: []gatewire.Credential{{
			ID: "cred1", Placeholder: egress.Placeholder(testSID, "KEY"),
			Secret: gatewire.NewSecret(testSecretValue), AllowedHosts: []string{host},
			Locations: []gatewire.Location{gatewire.LocationHeaders},
		}},
	})
	require.NoError(t, err)
	return b
}

// recorder is a shared, ordered log of calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

var errInjected = errors.New("injected failure")

// fakeSystem records the startup steps and fails the one named fail.
type fakeSystem struct {
	rec  *recorder
	fail string
}

func (f *fakeSystem) step(name string) error {
	f.rec.add(name)
	if f.fail == name {
		return errInjected
	}
	return nil
}

func (f *fakeSystem) InstallFirewall(uint32) error              { return f.step("firewall") }
func (f *fakeSystem) PrepareCADir(string, uint32, uint32) error { return f.step("cadir") }
func (f *fakeSystem) DropPrivileges(uint32, uint32) error       { return f.step("drop") }
func (f *fakeSystem) VerifyUnprivileged(uint32, uint32) error   { return f.step("verify") }
func (f *fakeSystem) ClearCAFile(string) error                  { return f.step("clearca") }

func (f *fakeSystem) DenyList(context.Context, string) ([]netip.Prefix, error) {
	return []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32")}, f.step("deny")
}

func (f *fakeSystem) Listen(netip.AddrPort) (net.Listener, error) {
	if err := f.step("listen"); err != nil {
		return nil, err
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// fakeProxy behaves like adapters/proxy.Proxy towards the gate: SetConfig
// compiles (so a bad pattern is refused), the first good config mints a
// "CA", Revoke refuses later configs, Serve blocks until Shutdown.
type fakeProxy struct {
	rec      *recorder
	opts     ProxyOptions
	serveErr error // returned by Serve at once when set

	mu      sync.Mutex
	configs []gatewire.Config
	revoked bool
	ca      []byte
	stop    chan struct{}
	once    sync.Once
}

func newFakeProxy(rec *recorder) *fakeProxy { return &fakeProxy{rec: rec, stop: make(chan struct{})} }

func (p *fakeProxy) SetConfig(cfg gatewire.Config) error {
	p.rec.add("setconfig")
	if _, err := egress.Compile(cfg, egress.Options{Deny: p.opts.Deny}); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revoked {
		return errors.New("revoked")
	}
	p.configs = append(p.configs, cfg)
	if p.ca == nil {
		p.ca = []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")
	}
	return nil
}

func (p *fakeProxy) Revoke() {
	p.rec.add("revoke")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.revoked = true
}

func (p *fakeProxy) CACertPEM() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.ca)
}

func (p *fakeProxy) Serve(ln net.Listener) error {
	p.rec.add("serve")
	defer func() { _ = ln.Close() }()
	if p.serveErr != nil {
		return p.serveErr
	}
	<-p.stop
	return nil
}

func (p *fakeProxy) Shutdown(context.Context) error {
	p.rec.add("shutdown")
	p.once.Do(func() { close(p.stop) })
	return nil
}

func (p *fakeProxy) applied() []gatewire.Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]gatewire.Config(nil), p.configs...)
}

func (p *fakeProxy) isRevoked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.revoked
}

// syncBuffer is a log sink shared by goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger logs JSON at debug level into a buffer that the test checks
// for secrets at its end.
func testLogger(t *testing.T) (*slog.Logger, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	t.Cleanup(func() {
		require.NotContains(t, buf.String(), testSecretValue)
		require.NotContains(t, buf.String(), testToken)
	})
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}
