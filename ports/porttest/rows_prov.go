package porttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// provRows: Provision and adoption (CONTRACT §2).
func provRows() []row {
	return []row{
		{"C-PROV-1/idempotent-same-id-files-intact", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			first := s.provision(t, spec)
			require.NotEmpty(t, first.ID())
			sh(t, first, "echo kept > /workspace/marker")
			second := s.provision(t, spec)
			require.Equal(t, first.ID(), second.ID())
			require.Equal(t, "kept\n", string(readBack(t, second, "/workspace/marker")))
		}},
		{"C-PROV-2/image-mismatch", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			other := spec
			other.Image = s.h.NonRootImage
			mismatch(t, s, spec, other, "image")
		}},
		{"C-PROV-2/workdir-mismatch", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			other := spec
			other.Workdir = "/srv/other"
			mismatch(t, s, spec, other, "workdir")
		}},
		{"C-PROV-2/network-mismatch", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			other := spec
			other.Networking = domain.Networking{Type: domain.NetLimited}
			mismatch(t, s, spec, other, "net")
		}},
		{"C-PROV-2/network-mismatch-limited-first", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			spec.Networking = domain.Networking{Type: domain.NetLimited}
			other := spec
			other.Networking = domain.Networking{Type: domain.NetUnrestricted}
			mismatch(t, s, spec, other, "net")
		}},
		{"C-PROV-2/empty-workdir-is-default", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			first := s.provision(t, spec)
			require.Equal(t, sandbox.DefaultWorkdir+"\n", sh(t, first, "pwd"))
			spec.Workdir = sandbox.DefaultWorkdir
			second := s.provision(t, spec)
			require.Equal(t, first.ID(), second.ID())
			// An empty networking type is unrestricted, not a mismatch.
			spec.Networking = domain.Networking{Type: domain.NetUnrestricted}
			third := s.provision(t, spec)
			require.Equal(t, first.ID(), third.ID())
		}},
		{"C-PROV-3/changed-env-and-hardening-kept", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			spec.Env = map[string]string{"STAGE": "first"}
			first := s.provision(t, spec)
			spec.Env = map[string]string{"STAGE": "second", "EXTRA": "x"}
			spec.Hardening = sandbox.Hardening{ReadOnlyRootfs: true, CapDrop: []string{"ALL"}}
			second := s.provision(t, spec)
			require.Equal(t, first.ID(), second.ID())
			require.Equal(t, "first|", sh(t, second, `printf '%s|%s' "$STAGE" "$EXTRA"`))
			// The root stays writable: the new hardening was not applied.
			sh(t, second, "touch /porttest-rw && rm /porttest-rw")
		}},
		{"C-PROV-4/concurrent-provisions-converge", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			const n = 8
			handles := make([]ports.Sandbox, n)
			errs := make([]error, n)
			c := ctx(t)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					handles[i], errs[i] = s.h.Provider.Provision(c, spec)
				})
			}
			close(start)
			wg.Wait()
			for i := range n {
				require.NoError(t, errs[i], "provision %d", i)
				require.Equal(t, handles[0].ID(), handles[i].ID(), "provision %d converged elsewhere", i)
			}
			sh(t, handles[0], "echo one > /workspace/one")
			require.Equal(t, "one\n", string(readBack(t, handles[n-1], "/workspace/one")))
			count := 0
			for _, id := range s.owned(t) {
				if id == spec.SessionID {
					count++
				}
			}
			require.Equal(t, 1, count, "owned must list the session once")
		}},
		{"C-PROV-5/foreign-name-holder-refused", func(t *testing.T, s *suite) {
			id := s.sid(t)
			f := s.foreign(t, id)
			sb, err := s.h.Provider.Provision(ctx(t), sandbox.Spec{SessionID: id, Image: s.h.Image})
			require.Error(t, err, "provision adopted a foreign name holder")
			requireNoHandle(t, sb, "provision")
			sb, err = s.h.Provider.Attach(ctx(t), id)
			require.Error(t, err, "attach adopted a foreign name holder")
			require.NotErrorIs(t, err, sandbox.ErrNotFound, "a foreign holder is an error, not a miss")
			requireNoHandle(t, sb, "provision")
			rc, err := s.h.Provider.Export(ctx(t), id, "/etc")
			require.Error(t, err, "export read a foreign name holder")
			require.NotErrorIs(t, err, sandbox.ErrNotFound)
			require.Nil(t, rc)
			require.NotContains(t, s.owned(t), id, "owned lists an unlabelled asset")
			requireForeignExists(t, f)
		}},
		{"C-PROV-5/reap-spares-foreign-name-holder", func(t *testing.T, s *suite) {
			id := s.sid(t)
			f := s.foreign(t, id)
			require.NoError(t, s.h.Provider.Reap(ctx(t), id), "reap selects by label: nothing to do")
			requireForeignExists(t, f)
		}},
		{"C-PROV-6/unpullable-image-is-a-clear-error", func(t *testing.T, s *suite) {
			// Not a capability: Docker's own pull and the kubelet's both fail
			// on this registry, and the provider must report it well inside
			// the readiness bound (C-PROV-8), not wait it out.
			id := s.sid(t)
			c, cancel := context.WithTimeout(ctx(t), unpullableBound)
			defer cancel()
			sb, err := s.h.Provider.Provision(c, sandbox.Spec{SessionID: id, Image: unpullableImage})
			require.Error(t, err)
			require.NoError(t, c.Err(), "the pull must fail by itself within %v, not by the row's deadline", unpullableBound)
			requireNoHandle(t, sb, "provision")
			require.Contains(t, err.Error(), unpullableImage, "the error must name the image")
			s.requireAbsent(t, id)
		}},
		{"C-PROV-7/limited-has-no-route", func(t *testing.T, s *suite) {
			sb := s.provision(t, sandbox.Spec{Networking: domain.Networking{Type: domain.NetLimited}})
			routes := parseRoutes(sh(t, sb, "cat /proc/net/route"))
			for _, r := range routes {
				require.Equal(t, "lo", r.iface, "a limited sandbox has a route out: %+v", r)
			}
		}},
		{"C-PROV-7/limited-cannot-connect", func(t *testing.T, s *suite) {
			ln, accepted := listenAll(t)
			port := ln.Addr().(*net.TCPAddr).Port
			addrs := hostIPv4s(t)
			sb := s.provision(t, sandbox.Spec{Networking: domain.Networking{Type: domain.NetLimited}})
			for _, a := range addrs {
				// Positive control: the listener answers this address here.
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(a, fmt.Sprint(port)), 2*time.Second)
				require.NoError(t, err, "control dial %s", a)
				_ = conn.Close()
				res := exec(t, sb, sandbox.ExecRequest{
					Command: fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%d' && echo CONNECTED", a, port),
					Timeout: 10 * time.Second,
				})
				require.NotContains(t, res.Stdout, "CONNECTED", "a limited sandbox reached %s:%d", a, port)
			}
			require.Equal(t, int32(len(addrs)), accepted(), "only the control dials may arrive")
		}},
		{"C-PROV-7/unrestricted-has-default-route", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			routes := parseRoutes(sh(t, sb, "cat /proc/net/route"))
			found := false
			for _, r := range routes {
				if r.dest == "00000000" && r.mask == "00000000" {
					found = true
				}
			}
			require.True(t, found, "no default route in %+v", routes)
		}},
		{"C-PROV-9/workdir-exists-keepalive-runs", func(t *testing.T, s *suite) {
			const workdir = "/srv/deep/work dir"
			sb := s.provision(t, sandbox.Spec{Workdir: workdir})
			require.Equal(t, workdir+"\n", sh(t, sb, "pwd"))
			require.Equal(t, "directory", fileType(t, sb, workdir))
			keepAlive(t, sb, workdir)
			require.Positive(t, liveProcs(t, sb, "sleep 3600"), "the process scan must see the keep-alive's sleep")
		}},
		{"C-PROV-1/adoption-sweeps-stale-temporaries", func(t *testing.T, s *suite) {
			// Issue 11 item 11: what a killed executor's writes left is
			// removed by the first adoption of a new provider — once stale
			// (sandbox.DefaultStaleTempAge), and only names of ours.
			spec := s.spec(t)
			sb := s.provision(t, spec)
			stale := []string{"/workspace/" + sandbox.TempPrefix + "0123456789abcdef",
				"/tmp/" + sandbox.TempPrefix + "fedcba9876543210.manifest"}
			kept := []string{"/workspace/" + sandbox.TempPrefix + "00000000000000ff", // live: fresh
				"/workspace/" + sandbox.TempPrefix + "notours"} // old, but not our name
			sh(t, sb, "touch -d '-1 hour' "+q(stale[0])+" "+q(stale[1])+" "+q(kept[1])+" && : >"+q(kept[0]))
			again, err := s.h.WithTokens(nil).Provision(ctx(t), spec)
			require.NoError(t, err)
			require.Equal(t, sb.ID(), again.ID(), "the new provider adopts the sandbox")
			for _, p := range stale {
				require.False(t, exists(t, again, p), "%s was not swept", p)
			}
			for _, p := range kept {
				require.True(t, exists(t, again, p), "%s was swept", p)
			}
		}},
		{"C-PROV-9/zombies-reaped", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			// Orphans that exit are re-parented to PID 1, which must reap them.
			sh(t, sb, "for i in 1 2 3 4 5; do (sleep 0.2 &) ; done")
			eventually(t, 5*time.Second, func() bool {
				for _, p := range listProcs(t, sb) {
					if p.state == "Z" && p.ppid == 1 {
						return false
					}
				}
				return true
			}, "zombies are left unreaped")
		}},
	}
}

// unpullableImage names a registry on a loopback port nothing listens on:
// the pull is refused at once and no test traffic leaves the machine.
const unpullableImage = "127.0.0.1:1/sandgate-missing:1"

// unpullableBound is how long an unpullable image may take to fail
// Provision: well under the readiness bound of C-PROV-8 (2 min), so that a
// provider waiting it out fails the row.
const unpullableBound = time.Minute

// mismatch provisions spec, then other (which differs in field), requiring
// ErrSpecMismatch naming the field, the sandbox untouched, and spec
// adopting it again (C-PROV-2).
func mismatch(t *testing.T, s *suite, spec, other sandbox.Spec, field string) {
	t.Helper()
	first := s.provision(t, spec)
	sh(t, first, "echo untouched > /tmp/marker")
	sb, err := s.h.Provider.Provision(ctx(t), other)
	require.ErrorIs(t, err, sandbox.ErrSpecMismatch)
	require.Contains(t, strings.ToLower(err.Error()), field, "the error must name the field")
	requireNoHandle(t, sb, "the call")
	require.Equal(t, "untouched\n", string(readBack(t, first, "/tmp/marker")), "the sandbox was changed")
	again := s.provision(t, spec)
	require.Equal(t, first.ID(), again.ID(), "the original spec must adopt the sandbox again")
	require.Equal(t, "untouched\n", string(readBack(t, again, "/tmp/marker")))
}

// foreign creates a foreign name holder for id and removes it when the row
// ends.
func (s *suite) foreign(t *testing.T, id domain.ID) ForeignHolder {
	t.Helper()
	f, err := s.h.Foreign(ctx(t), id)
	require.NoError(t, err, "harness: create foreign name holder")
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), reapTimeout)
		defer cancel()
		if err := f.Remove(c); err != nil {
			t.Errorf("cleanup: remove foreign holder: %v", err)
		}
	})
	return f
}

func requireForeignExists(t *testing.T, f ForeignHolder) {
	t.Helper()
	ok, err := f.Exists(ctx(t))
	require.NoError(t, err)
	require.True(t, ok, "the foreign name holder was deleted")
}

// route is one line of /proc/net/route.
type route struct{ iface, dest, mask string }

func parseRoutes(table string) []route {
	var out []route
	sc := bufio.NewScanner(strings.NewReader(table))
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 8 {
			continue
		}
		out = append(out, route{iface: f[0], dest: f[1], mask: f[7]})
	}
	return out
}

// listenAll starts a TCP listener the row owns on every interface and
// counts what it accepts.
func listenAll(t *testing.T) (net.Listener, func() int32) {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	var n int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			_ = c.Close()
		}
	}()
	return ln, func() int32 {
		time.Sleep(200 * time.Millisecond) // let a late accept land
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// hostIPv4s lists this host's non-loopback IPv4 addresses (the Docker
// bridge among them): the addresses a sandbox with a route could reach the
// row's listener on.
func hostIPv4s(t *testing.T) []string {
	t.Helper()
	ifaces, err := net.InterfaceAddrs()
	require.NoError(t, err)
	var out []string
	for _, a := range ifaces {
		ipn, ok := a.(*net.IPNet)
		if ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			out = append(out, ipn.IP.String())
		}
		if len(out) == 4 {
			break
		}
	}
	require.NotEmpty(t, out, "the host has no non-loopback IPv4 address to listen on")
	return out
}

// proc is one process of the sandbox as /proc shows it.
type proc struct {
	pid, ppid int
	state     string
	cmdline   string // argv joined by \x01
}

// keepAlive returns the process running the keep-alive of a sandbox whose
// workdir is workdir (C-PROV-9), failing the row if there is none.
func keepAlive(t *testing.T, sb ports.Sandbox, workdir string) proc {
	t.Helper()
	want := strings.Join(sandbox.KeepAliveArgv(workdir), "\x01")
	procs := listProcs(t, sb)
	for _, p := range procs {
		if p.cmdline == want {
			return p
		}
	}
	require.FailNow(t, "no process runs the keep-alive", "want %q among %+v", want, procs)
	return proc{}
}

// listProcs reads every process of the sandbox (pid, ppid, state, argv).
func listProcs(t *testing.T, sb ports.Sandbox) []proc {
	t.Helper()
	out := sh(t, sb, procScan(`	__old=$IFS; IFS=$'\001'; __j="${__args[*]}"; IFS=$__old
	__j=${__j//$'\n'/$'\002'}
	set -- $__st
	printf '%s\t%s\t%s\t%s\n' "$__p" "$2" "$1" "$__j"`))
	var procs []proc
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 {
			continue
		}
		var p proc
		if _, err := fmt.Sscan(f[0], &p.pid); err != nil {
			continue
		}
		if _, err := fmt.Sscan(f[1], &p.ppid); err != nil {
			continue
		}
		p.state, p.cmdline = f[2], f[3]
		procs = append(procs, p)
	}
	return procs
}
