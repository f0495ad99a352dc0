//go:build integration

package docker_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/sandgate/sandgate/adapters/docker/dockertest"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/egress"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/internal/testworld"
	"github.com/sandgate/sandgate/ports"
)

// Secrets of the suite's credentials: distinctive, so a grep finds any copy.
const (
	headerSecret = "sgtest-header-secret-5e1f0c"
	bodySecret   = "sgtest-body-secret-9a7d42"
	ipSecret     = "sgtest-ip-secret-3c8b17"
)

// securitySuite is the state the rows share: one limited sandbox with two
// credentials bound to the origin's name, and one unrestricted sandbox
// without credentials (the dial floor's rows).
type securitySuite struct {
	e                *testworld.Env
	limited, open    ports.Sandbox
	limitedID        domain.ID
	openID           domain.ID
	ip               string // the origin's IPv4
	headerPH, bodyPH string // the placeholders the sandbox sees
}

// TestSecurity attacks the gate from inside real gated sandboxes (issue 4
// item 8, CONTRACT §10–§11): every row asserts the exact outcome and, for
// refusals, that the origin saw nothing.
//
// Not covered here: DNS rebinding through a resolver the test controls (the
// gate resolves through Docker's embedded DNS, which the test cannot make
// change its answer; a name resolving to an unopened internal address is
// covered by the unrestricted SSRF row), and a kernel without xt_owner.
func TestSecurity(t *testing.T) { runSecurity(t, testworld.New(t)) }

// TestSecurityGVisor is the same attack from gVisor sandboxes: their
// sockets are the Sentry's, made in the gate's network namespace under
// the Sentry's uid (runsc --network=host), so the owner-match firewall has
// to hold for them as it does for runc's processes.
func TestSecurityGVisor(t *testing.T) {
	requireGVisor(t, dockertest.Client(t))
	runSecurity(t, testworld.New(t, testworld.GVisor(gvisorRuntime)))
}

func runSecurity(t *testing.T, e *testworld.Env) {
	e.GateImage(t)
	s := &securitySuite{e: e, ip: e.Origin.IPv4.String()}
	creds := []session.Credential{
		{ID: "api", Name: "API_KEY", Secret: gatewire.NewSecret(headerSecret), AllowedHosts: []string{testworld.OriginName},
			Locations: []gatewire.Location{gatewire.LocationHeaders}},
		{ID: "body", Name: "BODY_KEY", Secret: gatewire.NewSecret(bodySecret), AllowedHosts: []string{testworld.OriginName},
			Locations: []gatewire.Location{gatewire.LocationHeaders, gatewire.LocationBody}},
	}
	// The origin's name resolves to its IPv4 and, on an IPv6 network, its
	// IPv6 address: the dial floor needs both opened (C-GW-5).
	opened := []string{testworld.OriginName, s.ip}
	if e.Origin.IPv6.IsValid() {
		// A credential bound to an IP literal: its host is intercepted too
		// (the IPv4 literal stays unbound for the opaque-tunnel rows).
		opened = append(opened, e.Origin.IPv6.String())
		creds = append(creds, session.Credential{ID: "ip", Name: "IP_KEY", Secret: gatewire.NewSecret(ipSecret),
			AllowedHosts: []string{e.Origin.IPv6.String()}, Locations: []gatewire.Location{gatewire.LocationHeaders}})
	}
	s.limited, s.limitedID = e.Provision(t, domain.Networking{Type: domain.NetLimited, AllowedHosts: opened}, creds)
	s.open, s.openID = e.Provision(t, domain.Networking{Type: domain.NetUnrestricted}, nil)
	s.headerPH = egress.Placeholder(s.limitedID, "API_KEY")
	s.bodyPH = egress.Placeholder(s.limitedID, "BODY_KEY")

	t.Run("policy", s.policyRows)
	t.Run("direct egress", s.directRows)
	t.Run("dns", s.dnsRows)
	t.Run("privileges", s.privilegeRows)
	t.Run("ssrf", s.ssrfRows)
	t.Run("credentials", s.credentialRows)
	t.Run("https", s.httpsRows)
	t.Run("body over 10 MiB", s.bigBodyRow)
	t.Run("streams", s.streamRows)
	t.Run("secrets absent", s.secretsAbsentRows)
	t.Run("spans", s.spanRows)
	t.Run("revoked token", s.revokeRow)
	t.Run("fail closed", s.failClosedRow)
	t.Run("fail closed without the owner match", s.noOwnerMatchRow)
}

// probe runs the probe in sb.
func (s *securitySuite) probe(t *testing.T, sb ports.Sandbox, args ...string) sandbox.ExecResult {
	t.Helper()
	return s.e.Probe(t, sb, args...)
}

// both names the suite's two sandboxes.
func (s *securitySuite) both() map[string]ports.Sandbox {
	return map[string]ports.Sandbox{"limited": s.limited, "unrestricted": s.open}
}

// requireStatus asserts the probe got a response with exactly code.
func requireStatus(t *testing.T, res sandbox.ExecResult, code int) {
	t.Helper()
	require.Contains(t, res.Stdout, fmt.Sprintf("status: %d\n", code), "stdout %q stderr %q", res.Stdout, res.Stderr)
}

// requireRefused asserts a probe attempt failed (exit 1) without success
// output.
func requireRefused(t *testing.T, res sandbox.ExecResult, success string) {
	t.Helper()
	require.Equal(t, 1, res.ExitCode, "stdout %q stderr %q", res.Stdout, res.Stderr)
	require.NotContains(t, res.Stdout, success)
}

// requireUnseen asserts the origin logged no request carrying marker.
func (s *securitySuite) requireUnseen(t *testing.T, marker string) {
	t.Helper()
	require.Empty(t, s.e.OriginRequests(t, marker), "the origin saw %s", marker)
}

// one returns the single origin record carrying marker.
func (s *securitySuite) one(t *testing.T, marker string) testworld.Record {
	t.Helper()
	recs := s.e.AwaitOriginRequests(t, marker, 1)
	require.Len(t, recs, 1, "origin records of %s", marker)
	return recs[0]
}

func (s *securitySuite) policyRows(t *testing.T) {
	t.Run("allowed origin by IP", func(t *testing.T) {
		res := s.probe(t, s.limited, "http", "http://"+s.ip+"/m/allowed-ip/")
		requireStatus(t, res, 200)
		require.Contains(t, res.Stdout, `"url":"/m/allowed-ip/"`)
		require.Equal(t, "GET", s.one(t, "/m/allowed-ip/").Method)
	})
	t.Run("allowed origin by name, resolved by the gate", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "http://"+testworld.OriginName+"/m/allowed-name/"), 200)
		require.Equal(t, testworld.OriginName, s.one(t, "/m/allowed-name/").Host)
	})
	t.Run("host not allowed", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "http://notallowed.test/m/denied/"), 403)
		s.requireUnseen(t, "/m/denied/")
	})
	t.Run("spoofed Host header does not admit a denied URI", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "--host", testworld.OriginName,
			"http://notallowed.test/m/host-spoof/"), 403)
		s.requireUnseen(t, "/m/host-spoof/")
	})
	t.Run("CONNECT to a host not allowed", func(t *testing.T) {
		res := s.probe(t, s.limited, "connect", "--tls", "notallowed.test:443")
		require.Contains(t, res.Stdout, "connect: 403\n", "stdout %q stderr %q", res.Stdout, res.Stderr)
	})
}

func (s *securitySuite) directRows(t *testing.T) {
	before := s.countKind(t, "tcp")
	targets := []string{net.JoinHostPort(s.ip, "80"), net.JoinHostPort(s.ip, "443"), net.JoinHostPort(s.ip, "7")}
	if s.e.Origin.IPv6.IsValid() {
		v6 := s.e.Origin.IPv6.String()
		targets = append(targets, net.JoinHostPort(v6, "80"), net.JoinHostPort(v6, "7"))
	} else {
		t.Log("the test network has no IPv6: the IPv6 direct dials are not run")
	}
	cp, err := url.Parse(s.e.ControlplaneURL)
	require.NoError(t, err)
	targets = append(targets, cp.Host)
	for name, sb := range s.both() {
		for _, addr := range targets {
			t.Run(name+" tcp "+addr, func(t *testing.T) {
				requireRefused(t, s.probe(t, sb, "tcp", addr), "connected")
			})
		}
		t.Run(name+" udp echo", func(t *testing.T) {
			requireRefused(t, s.probe(t, sb, "udp", net.JoinHostPort(s.ip, "7")), "reply:")
		})
	}
	require.Equal(t, before, s.countKind(t, "tcp"), "the origin accepted a direct connection")
	require.Zero(t, s.countKind(t, "udp"), "the origin received a direct datagram")
	t.Run("the gate's proxy port is the one way out", func(t *testing.T) {
		require.Equal(t, 0, s.probe(t, s.limited, "tcp", gatewire.ProxyAddr).ExitCode)
	})
}

// countKind counts the origin's records of one kind.
func (s *securitySuite) countKind(t *testing.T, kind string) int {
	t.Helper()
	n := 0
	for _, r := range s.e.OriginLog(t) {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

func (s *securitySuite) dnsRows(t *testing.T) {
	for name, sb := range s.both() {
		for _, server := range []string{net.JoinHostPort(s.ip, "53"), "127.0.0.11:53"} {
			for _, proto := range []string{"udp", "tcp"} {
				t.Run(name+" "+proto+" "+server, func(t *testing.T) {
					requireRefused(t, s.probe(t, sb, "dns", proto, server, "leak.example"), "answer:")
				})
			}
		}
	}
	require.Zero(t, s.countKind(t, "dns-udp")+s.countKind(t, "dns-tcp"), "the origin's resolver got a query")
	t.Run("the gate still resolves for the proxy", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "http://"+testworld.OriginName+"/m/dns-via-gate/"), 200)
	})
}

// capability bits of /proc/self/status CapEff (linux/capability.h).
const (
	capSetgid   = 6
	capSetuid   = 7
	capNetAdmin = 12
	capNetRaw   = 13
)

func (s *securitySuite) privilegeRows(t *testing.T) {
	t.Run("raw sockets", func(t *testing.T) {
		res := s.probe(t, s.limited, "raw")
		requireRefused(t, res, "opened")
		require.Contains(t, res.Stdout, "inet raw icmp: operation not permitted")
		require.Contains(t, res.Stdout, "packet raw: operation not permitted")
	})
	// The firewall governs IP in the network namespace; vsock and the other
	// families go past it, so the sandbox's seccomp profile denies them (on
	// the unrestricted sandbox as well).
	for name, sb := range s.both() {
		t.Run("socket families "+name, func(t *testing.T) {
			res := s.probe(t, sb, "families")
			if s.e.Isolation == sandbox.IsolationGVisor {
				testworld.RequireFamiliesNarrowedGVisor(t, res)
				return
			}
			testworld.RequireFamiliesNarrowed(t, res)
		})
	}
	t.Run("setuid to the gate uid", func(t *testing.T) {
		res := s.probe(t, s.limited, "setuid", strconv.Itoa(gatewire.UID))
		requireRefused(t, res, "uid ")
		require.Contains(t, res.Stdout, "operation not permitted")
	})
	t.Run("capabilities", func(t *testing.T) {
		res := s.e.Exec(t, s.limited, "grep '^CapEff:' /proc/self/status")
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		eff, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(res.Stdout, "CapEff:")), 16, 64)
		require.NoError(t, err, res.Stdout)
		for name, bit := range map[string]uint{"NET_ADMIN": capNetAdmin, "NET_RAW": capNetRaw,
			"SETUID": capSetuid, "SETGID": capSetgid} {
			require.Zero(t, eff&(1<<bit), "the sandbox holds CAP_%s (CapEff %x)", name, eff)
		}
	})
	t.Run("iptables -F", func(t *testing.T) {
		if s.e.Exec(t, s.limited, "command -v iptables").ExitCode != 0 {
			skipOutsideCI(t, "%s has no iptables: the missing NET_ADMIN above covers it", s.e.SandboxImage)
		}
		for _, cmd := range []string{"iptables -F", "iptables -F OUTPUT", "ip6tables -F", "iptables -P OUTPUT ACCEPT"} {
			res := s.e.Exec(t, s.limited, cmd)
			require.NotEqual(t, 0, res.ExitCode, "%s succeeded: %s", cmd, res.Stdout)
		}
		requireRefused(t, s.probe(t, s.limited, "tcp", net.JoinHostPort(s.ip, "80")), "connected")
	})
}

// ssrfTargets are URLs that name loopback, link-local, the gate, the
// control plane and private addresses, in canonical and alternate
// spellings. Each gets a marker path.
func (s *securitySuite) ssrfTargets(t *testing.T) []string {
	cp, err := url.Parse(s.e.ControlplaneURL)
	require.NoError(t, err)
	return []string{
		"http://2130706433/", "http://0x7f000001/", "http://127.1/", "http://0177.0.0.1/",
		"http://127.0.0.1:15080/", "http://[::1]:15080/", "http://localhost:15080/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://0.0.0.0/",
		"http://169.254.169.254/", "http://[fd00:ec2::254]/",
		s.e.ControlplaneURL + "/", "http://" + cp.Host + "/internal/v1/gate/config?",
	}
}

func (s *securitySuite) ssrfRows(t *testing.T) {
	for i, target := range s.ssrfTargets(t) {
		marker := fmt.Sprintf("m/ssrf-%d/", i)
		for name, sb := range s.both() {
			t.Run(name+" "+target, func(t *testing.T) {
				requireStatus(t, s.probe(t, sb, "http", target+marker), 403)
			})
		}
		s.requireUnseen(t, marker)
	}
	t.Run("unrestricted does not mean private addresses", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.open, "http", "http://"+s.ip+"/m/open-private-ip/"), 403)
		requireStatus(t, s.probe(t, s.open, "http", "http://"+testworld.OriginName+"/m/open-private-name/"), 403)
		s.requireUnseen(t, "/m/open-private-")
	})
}

func (s *securitySuite) credentialRows(t *testing.T) {
	t.Run("placeholder substituted for the bound host, echo redacted", func(t *testing.T) {
		// $API_KEY is expanded by the sandbox's shell: the placeholder is what
		// the sandbox's environment holds.
		res := s.e.Exec(t, s.limited, testworld.ProbeInSandbox+` http --header "Authorization: Bearer $API_KEY" http://`+
			testworld.OriginName+"/m/cred-header/")
		requireStatus(t, res, 200)
		require.Equal(t, []string{"Bearer " + headerSecret}, s.one(t, "/m/cred-header/").Headers["Authorization"])
		require.NotContains(t, res.Stdout, headerSecret, "the echoed secret reached the sandbox")
		require.Contains(t, res.Stdout, s.headerPH, "the echo is redacted to the placeholder")
	})
	t.Run("placeholder to an allowed but unbound host travels literally", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "--header", "Authorization: Bearer "+s.headerPH,
			"http://"+s.ip+"/m/cred-unbound/"), 200)
		require.Equal(t, []string{"Bearer " + s.headerPH}, s.one(t, "/m/cred-unbound/").Headers["Authorization"])
	})
	t.Run("body substitution only where enabled", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "--body", "a="+s.bodyPH+"&b="+s.headerPH,
			"http://"+testworld.OriginName+"/m/cred-body/"), 200)
		require.Equal(t, "a="+bodySecret+"&b="+s.headerPH, s.one(t, "/m/cred-body/").Body)
	})
	t.Run("body placeholder to an unbound host travels literally", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "--body", "a="+s.bodyPH, "http://"+s.ip+"/m/cred-body-unbound/"), 200)
		require.Equal(t, "a="+s.bodyPH, s.one(t, "/m/cred-body-unbound/").Body)
	})
}

// sessionCAName is the common name of the session CA the gate installed in
// the sandbox (the issuer of every intercepted leaf).
func (s *securitySuite) sessionCAName(t *testing.T) string {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	data, err := s.limited.ReadFile(ctx, gatewire.SandboxCACert)
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block, "no PEM in %s", gatewire.SandboxCACert)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.True(t, cert.IsCA)
	require.NotEqual(t, s.e.OriginCACommonName(), cert.Subject.CommonName)
	return cert.Subject.CommonName
}

func (s *securitySuite) httpsRows(t *testing.T) {
	caName := s.sessionCAName(t)
	origin443 := net.JoinHostPort(testworld.OriginName, "443")
	t.Run("bound host is intercepted, substituted and verified upstream", func(t *testing.T) {
		// No --cafile: the sandbox trusts the session CA through SSL_CERT_FILE.
		res := s.probe(t, s.limited, "http", "--header", "Authorization: Bearer "+s.headerPH,
			"https://"+testworld.OriginName+"/m/mitm/")
		requireStatus(t, res, 200)
		require.Contains(t, res.Stdout, "issuer: "+caName+"\n")
		rec := s.one(t, "/m/mitm/")
		require.Equal(t, "https", rec.Kind)
		require.Equal(t, testworld.OriginName, rec.SNI)
		require.Equal(t, []string{"Bearer " + headerSecret}, rec.Headers["Authorization"])
		require.NotContains(t, res.Stdout, headerSecret)
	})
	for _, tc := range []struct{ name, marker string }{
		{"inner Host differs from the CONNECT authority", "/m/mitm-host/"},
		{"inner absolute URI differs from the CONNECT authority", "https://notallowed.test/m/mitm-abs/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"connect", "--tls", "--path", tc.marker}
			if tc.marker == "/m/mitm-host/" {
				args = append(args, "--host", "notallowed.test")
			}
			args = append(args, origin443)
			res := s.probe(t, s.limited, args...)
			require.Contains(t, res.Stdout, "connect: 200\n")
			require.Contains(t, res.Stdout, "issuer: "+caName+"\n")
			requireStatus(t, res, 403)
			s.requireUnseen(t, "/m/mitm-")
		})
	}
	t.Run("bound IP literal is intercepted and substituted", func(t *testing.T) {
		if !s.e.Origin.IPv6.IsValid() {
			skipOutsideCI(t, "the test network has no IPv6: no credential is bound to an IP literal")
		}
		res := s.probe(t, s.limited, "http", "--header", "Authorization: Bearer "+egress.Placeholder(s.limitedID, "IP_KEY"),
			"https://"+net.JoinHostPort(s.e.Origin.IPv6.String(), "443")+"/m/mitm-ip/")
		requireStatus(t, res, 200)
		require.Contains(t, res.Stdout, "issuer: "+caName+"\n")
		require.Equal(t, []string{"Bearer " + ipSecret}, s.one(t, "/m/mitm-ip/").Headers["Authorization"])
		require.NotContains(t, res.Stdout, ipSecret)
	})
	t.Run("SNI differs from the intercepted CONNECT authority", func(t *testing.T) {
		res := s.probe(t, s.limited, "connect", "--tls", "--sni", "notallowed.test", "--path", "/m/mitm-sni/", origin443)
		require.Contains(t, res.Stdout, "connect: 200\n", "stdout %q stderr %q", res.Stdout, res.Stderr)
		require.NotContains(t, res.Stdout, "status: 200")
		s.requireUnseen(t, "/m/mitm-sni/")
	})
	t.Run("host without credentials is an opaque tunnel", func(t *testing.T) {
		res := s.probe(t, s.limited, "http", "--cafile", testworld.OriginCAInSandbox, "--header",
			"Authorization: Bearer "+s.headerPH, "https://"+s.ip+"/m/opaque/")
		requireStatus(t, res, 200)
		require.Contains(t, res.Stdout, "issuer: "+s.e.OriginCACommonName()+"\n")
		require.Equal(t, []string{"Bearer " + s.headerPH}, s.one(t, "/m/opaque/").Headers["Authorization"])
	})
	t.Run("opaque tunnel with a foreign SNI", func(t *testing.T) {
		res := s.probe(t, s.limited, "connect", "--tls", "--sni", "notallowed.test", "--path", "/m/opaque-sni/",
			net.JoinHostPort(s.ip, "443"))
		require.Contains(t, res.Stdout, "connect: 200\n", "stdout %q stderr %q", res.Stdout, res.Stderr)
		require.NotContains(t, res.Stdout, "status: 200")
		s.requireUnseen(t, "/m/opaque-sni/")
	})
}

func (s *securitySuite) bigBodyRow(t *testing.T) {
	res := s.probe(t, s.limited, "http", "--body-size", strconv.Itoa(10<<20+1),
		"http://"+testworld.OriginName+"/m/big-body/")
	requireStatus(t, res, 413)
	s.requireUnseen(t, "/m/big-body/")
	t.Run("exactly 10 MiB passes", func(t *testing.T) {
		requireStatus(t, s.probe(t, s.limited, "http", "--body-size", strconv.Itoa(10<<20),
			"http://"+testworld.OriginName+"/m/body-10mib/"), 200)
		require.Equal(t, int64(10<<20), s.one(t, "/m/body-10mib/").BodyLen)
	})
}

// eventTimes returns the arrival time (ms) of each "data:" line a stream
// probe printed.
func eventTimes(t *testing.T, stdout string) []int {
	t.Helper()
	var out []int
	for _, line := range strings.Split(stdout, "\n") {
		ts, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(ts, "t=") || !strings.HasPrefix(rest, "data:") {
			continue
		}
		ms, err := strconv.Atoi(strings.TrimPrefix(ts, "t="))
		require.NoError(t, err, line)
		out = append(out, ms)
	}
	return out
}

func (s *securitySuite) streamRows(t *testing.T) {
	t.Run("SSE flows unbuffered", func(t *testing.T) {
		res := s.probe(t, s.limited, "stream", "http://"+testworld.OriginName+"/sse/m/sse/")
		requireStatus(t, res, 200)
		times := eventTimes(t, res.Stdout)
		require.Len(t, times, 3, res.Stdout)
		// The origin sends the events 1.5 s apart: a gate that buffers the
		// response delivers them together.
		require.GreaterOrEqual(t, times[2]-times[0], 2000, "events arrived together: %v", times)
	})
	t.Run("WebSocket upgrade relays both ways", func(t *testing.T) {
		res := s.probe(t, s.limited, "upgrade", "http://"+s.ip+"/ws/m/ws/")
		requireStatus(t, res, 101)
		require.Contains(t, res.Stdout, "echo: probe-ws-message\n")
		require.Len(t, s.e.AwaitOriginRequests(t, "/ws/m/ws/", 1), 1)
	})
	t.Run("WebSocket to a credential-bound host is refused", func(t *testing.T) {
		// Its frames would pass echo redaction by (docs/SECURITY.md).
		res := s.probe(t, s.limited, "upgrade", "http://"+testworld.OriginName+"/ws/m/ws-bound/")
		requireStatus(t, res, 403)
		s.requireUnseen(t, "/ws/m/ws-bound/")
	})
	t.Run("slowloris is cut off", func(t *testing.T) {
		res := s.probe(t, s.limited, "slowloris", "--for", "50s", "http://"+s.ip+"/m/slowloris/")
		require.Equal(t, 0, res.ExitCode, "the gate still waited for the headers after 50 s: %s", res.Stdout)
		require.Contains(t, res.Stdout, "closed after ")
		s.requireUnseen(t, "/m/slowloris/")
	})
}

// secretsAbsentRows run after every row that used the secrets.
func (s *securitySuite) secretsAbsentRows(t *testing.T) {
	tokens := s.e.Tokens()
	require.NotEmpty(t, tokens)
	needles := append([]string{headerSecret, bodySecret, ipSecret}, tokens...)
	for name, cmd := range map[string]string{
		"env":          "env",
		"proc environ": "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
		"files": "grep -rIho -e " + testworld.ShellQuote(headerSecret) + " -e " + testworld.ShellQuote(bodySecret) +
			" -e " + testworld.ShellQuote(ipSecret) + " /etc /tmp /workspace /root 2>/dev/null; true",
	} {
		t.Run(name, func(t *testing.T) {
			for _, sb := range s.both() {
				res := s.e.Exec(t, sb, cmd)
				for _, n := range needles {
					require.NotContains(t, res.Stdout+res.Stderr, n, "%s shows a secret or gate token", name)
				}
			}
		})
	}
	t.Run("env holds the placeholders", func(t *testing.T) {
		res := s.e.Exec(t, s.limited, "env")
		require.Contains(t, res.Stdout, "API_KEY="+s.headerPH+"\n")
		require.Contains(t, res.Stdout, "BODY_KEY="+s.bodyPH+"\n")
	})
	t.Run("gate logs", func(t *testing.T) {
		for _, sid := range []domain.ID{s.limitedID, s.openID} {
			logs := s.e.GateLogs(t, sid)
			for _, n := range needles {
				require.NotContains(t, logs, n, "the gate of %s logged a secret or its token", sid)
			}
		}
	})
}

// spanAttr returns a span's string attribute, or its string-slice
// attribute joined with ",".
func spanAttr(sp *tracepb.Span, key string) string {
	for _, kv := range sp.GetAttributes() {
		if kv.GetKey() != key {
			continue
		}
		if arr := kv.GetValue().GetArrayValue(); arr != nil {
			var vals []string
			for _, v := range arr.GetValues() {
				vals = append(vals, v.GetStringValue())
			}
			return strings.Join(vals, ",")
		}
		return kv.GetValue().GetStringValue()
	}
	return ""
}

// spanRows read the spans the gates exported (B-5, C-GW-4): one
// egress_request client span per request, with the verdict and the ids of
// substituted credentials, and never a secret or a gate token.
func (s *securitySuite) spanRows(t *testing.T) {
	substituted := func(sp *tracepb.Span) bool {
		return spanAttr(sp, "server.address") == testworld.OriginName && spanAttr(sp, "sandgate.credential_ids") == "api"
	}
	denied := func(sp *tracepb.Span) bool {
		return spanAttr(sp, "server.address") == "notallowed.test" && spanAttr(sp, "sandgate.verdict") == "denied"
	}
	spans := s.e.Collector.WaitSpans(t, time.Minute, func(spans []*tracepb.Span) bool {
		return slices.ContainsFunc(spans, substituted) && slices.ContainsFunc(spans, denied)
	})
	needles := append([]string{headerSecret, bodySecret, ipSecret}, s.e.Tokens()...)
	for _, sp := range spans {
		require.Equal(t, "egress_request", sp.GetName())
		require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, sp.GetKind())
		text := prototext.Format(sp)
		for _, n := range needles {
			require.NotContains(t, text, n, "a span carries a secret or a gate token")
		}
	}
}

// revokePoll bounds the wait for a revoked token to take effect: the
// gate's default fetch interval (30 s, C-GW-1) plus slack.
const revokePoll = 45 * time.Second

func (s *securitySuite) revokeRow(t *testing.T) {
	requireStatus(t, s.probe(t, s.limited, "http", "http://"+s.ip+"/m/pre-revoke/"), 200)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, s.e.Store.Revoke(ctx, s.limitedID))
	deadline := time.Now().Add(revokePoll)
	for i := 0; ; i++ {
		res := s.probe(t, s.limited, "http", fmt.Sprintf("http://%s/m/revoke-%d/", s.ip, i))
		if strings.Contains(res.Stdout, "status: 403\n") {
			break
		}
		requireStatus(t, res, 200)
		require.True(t, time.Now().Before(deadline), "still admitted %s after the revocation", revokePoll)
		time.Sleep(time.Second)
	}
	requireStatus(t, s.probe(t, s.limited, "http", "http://"+testworld.OriginName+"/m/post-revoke/"), 403)
	res := s.probe(t, s.limited, "connect", "--tls", net.JoinHostPort(testworld.OriginName, "443"))
	require.Contains(t, res.Stdout, "connect: 403\n", "stdout %q stderr %q", res.Stdout, res.Stderr)
	s.requireUnseen(t, "/m/post-revoke/")
}

// noOwnerMatchRow: a gate whose iptables cannot load the owner match (a
// kernel without xt_owner) never becomes ready, and says why.
func (s *securitySuite) noOwnerMatchRow(t *testing.T) {
	sb, sid, err := s.e.ProvisionWith(t, s.e.NoOwnerMatchGate(t), domain.Networking{Type: domain.NetLimited,
		AllowedHosts: []string{s.ip}}, nil)
	require.Error(t, err, "a gate without the owner match was admitted")
	require.Nil(t, sb)
	require.Contains(t, err.Error(), "xt_owner")
	s.requireNoContainers(t, sid)
}

func (s *securitySuite) failClosedRow(t *testing.T) {
	// The gate installs IPv6 rules whenever the kernel has IPv6, whatever
	// the network: a broken ip6tables must stop it on any network.
	image := s.e.BrokenIP6tablesGate(t)
	sb, sid, err := s.e.ProvisionWith(t, image, domain.Networking{Type: domain.NetLimited,
		AllowedHosts: []string{s.ip}}, nil)
	require.Error(t, err, "a gate with a broken ip6tables was admitted")
	require.Nil(t, sb)
	// The error carries the gate's last log lines, which name what failed:
	// the IPv6 firewall.
	require.Contains(t, err.Error(), "gate log: ")
	require.Contains(t, strings.ToLower(err.Error()), "ipv6")
	s.requireNoContainers(t, sid)
}

// requireNoContainers: a failed gated provision leaves nothing behind.
func (s *securitySuite) requireNoContainers(t *testing.T, sid domain.ID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	left, err := s.e.Cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession+"="+sid.String()))})
	require.NoError(t, err)
	require.Empty(t, left, "a failed gated provision left containers behind")
}

// skipOutsideCI skips a row whose precondition the machine lacks; under
// CI=true, where everything the suite needs is installed, that is a failure.
func skipOutsideCI(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("under CI: "+format, args...)
	}
	t.Skipf(format, args...)
}
