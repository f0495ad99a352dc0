package porttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Bounds every row works under: a hung call fails its row instead of the
// whole run.
const (
	rowTimeout  = 3 * time.Minute
	reapTimeout = 2 * time.Minute
)

// ctx returns the row's context, cancelled when the row ends or after
// rowTimeout.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), rowTimeout)
	t.Cleanup(cancel)
	return c
}

// sid mints a fresh session id and reaps it when the row ends, whatever
// the row did with it.
func (s *suite) sid(t *testing.T) domain.ID {
	t.Helper()
	id := s.h.NewSessionID()
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), reapTimeout)
		defer cancel()
		if err := s.h.Provider.Reap(c, id); err != nil {
			t.Errorf("cleanup: reap %s: %v", id, err)
		}
	})
	return id
}

// spec is a spec for a fresh session on the suite's image.
func (s *suite) spec(t *testing.T) sandbox.Spec {
	t.Helper()
	return sandbox.Spec{SessionID: s.sid(t), Image: s.h.Image}
}

// provision provisions spec (a fresh session on Image when SessionID is
// zero) and fails the row on error.
func (s *suite) provision(t *testing.T, spec sandbox.Spec) ports.Sandbox {
	t.Helper()
	if spec.SessionID.IsZero() {
		spec.SessionID = s.sid(t)
	}
	if spec.Image == "" {
		spec.Image = s.h.Image
	}
	sb, err := s.h.Provider.Provision(ctx(t), spec)
	require.NoError(t, err, "provision %s", spec.SessionID)
	require.NotNil(t, sb)
	return sb
}

// fresh provisions a default sandbox for a fresh session.
func (s *suite) fresh(t *testing.T) ports.Sandbox {
	t.Helper()
	return s.provision(t, sandbox.Spec{})
}

// nonRoot provisions a fresh sandbox from NonRootImage.
func (s *suite) nonRoot(t *testing.T) ports.Sandbox {
	t.Helper()
	return s.provision(t, sandbox.Spec{Image: s.h.NonRootImage})
}

// sh runs script and requires exit 0, returning stdout.
func sh(t *testing.T, sb ports.Sandbox, script string) string {
	t.Helper()
	res, err := sb.Exec(ctx(t), sandbox.ExecRequest{Command: script, Timeout: time.Minute})
	require.NoError(t, err, "exec %q", script)
	require.Equal(t, 0, res.ExitCode, "exec %q: stdout %q stderr %q", script, res.Stdout, res.Stderr)
	require.False(t, res.TimedOut, "exec %q timed out", script)
	return res.Stdout
}

// exec runs req and requires that it returns a result.
func exec(t *testing.T, sb ports.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := sb.Exec(ctx(t), req)
	require.NoError(t, err, "exec %q", req.Command)
	return res
}

// q quotes s as one shell word for a fixture script; the rows' paths are
// their own constants, but the quoting keeps odd names honest.
func q(s string) string { return sandbox.ShellQuote(s) }

// statMode returns the octal permission bits of p (stat -c %a).
func statMode(t *testing.T, sb ports.Sandbox, p string) string {
	t.Helper()
	return strings.TrimSpace(sh(t, sb, "stat -c %a -- "+q(p)))
}

// fileType returns stat's file type of p without following a symlink.
func fileType(t *testing.T, sb ports.Sandbox, p string) string {
	t.Helper()
	return strings.TrimSpace(sh(t, sb, "LC_ALL=C stat -c %F -- "+q(p)))
}

// exists reports whether p exists (a dangling symlink counts).
func exists(t *testing.T, sb ports.Sandbox, p string) bool {
	t.Helper()
	return strings.TrimSpace(sh(t, sb, "if [ -e "+q(p)+" ] || [ -L "+q(p)+" ]; then echo y; else echo n; fi")) == "y"
}

// readBack reads p with ReadFile and requires success.
func readBack(t *testing.T, sb ports.Sandbox, p string) []byte {
	t.Helper()
	b, err := sb.ReadFile(ctx(t), p)
	require.NoError(t, err, "read %s", p)
	return b
}

// residueDirs are where a temporary write file could be left: the root
// filesystem and every writable or special mount a write row touches.
var residueDirs = []string{"/", sandbox.DefaultWorkdir, "/tmp", "/mnt", "/dev", "/etc"}

// residue lists (sorted, once each) the temporary write files under the usual places and the
// extra dirs. find runs with -xdev per dir, so every mount is searched once
// and /proc is never walked.
func residue(t *testing.T, sb ports.Sandbox, extra ...string) string {
	t.Helper()
	dirs := append(slices.Clone(residueDirs), extra...)
	var b strings.Builder
	b.WriteString("command -v find >/dev/null || exit 3; for d in")
	for _, d := range dirs {
		b.WriteString(" " + q(d))
	}
	b.WriteString("; do [ -d \"$d\" ] && find \"$d\" -xdev -name " + q(sandbox.TempPrefix+"*") + " -print 2>/dev/null; done; true")
	// A dir on the root filesystem is found by both "/" and its own find.
	found := strings.Split(strings.TrimSpace(sh(t, sb, b.String())), "\n")
	slices.Sort(found)
	return strings.Join(slices.Compact(found), "\n")
}

// noResidue requires that no temporary write file is left (C-WRITE-2).
func noResidue(t *testing.T, sb ports.Sandbox, extra ...string) {
	t.Helper()
	require.Empty(t, residue(t, sb, extra...), "temporary write files left behind")
}

// requireNotFound requires err to be ErrNotFound.
func requireNotFound(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, sandbox.ErrNotFound, what)
}

// requireAbsent requires that the session has no sandbox on the endpoint:
// Attach answers ErrNotFound with a nil handle and Owned does not list it.
func (s *suite) requireAbsent(t *testing.T, id domain.ID) {
	t.Helper()
	sb, err := s.h.Provider.Attach(ctx(t), id)
	requireNotFound(t, err, "attach "+id.String())
	requireNoHandle(t, sb, "attach")
	require.NotContains(t, s.owned(t), id, "owned lists %s", id)
}

// owned returns Owned's answer.
func (s *suite) owned(t *testing.T) []domain.ID {
	t.Helper()
	ids, err := s.h.Provider.Owned(ctx(t))
	require.NoError(t, err)
	return ids
}

// pattern returns a bash expression whose value is needle, written so that
// the script's own text does not contain needle: a process scan must not
// find itself (a wrapper may carry the command text in its argv).
func pattern(needle string) string {
	h := len(needle) / 2
	return q(needle[:h]) + q(needle[h:])
}

// procScan is a bash loop over every process of the sandbox but the
// scanning shell itself, with builtins only (a fork costs milliseconds in a
// container): in the body, $__p is the pid, $__st the fields of
// /proc/PID/stat after the command name (state first, then ppid), $__args
// the argv and $__cl the argv joined by spaces.
func procScan(body string) string {
	return `for __d in /proc/[0-9]*; do
	__p=${__d#/proc/}
	[ "$__p" = "$$" ] && continue
	read -r __st 2>/dev/null < "$__d/stat" || continue
	__st=${__st##*) }
	mapfile -d '' -t __args 2>/dev/null < "$__d/cmdline" || continue
	__cl="${__args[*]}"
` + body + `
done
`
}

// liveProcs counts the sandbox's live (non-zombie) processes whose command
// line contains needle.
func liveProcs(t *testing.T, sb ports.Sandbox, needle string) int {
	t.Helper()
	script := `n=` + pattern(needle) + `; c=0
` + procScan(`	case "$__cl" in *"$n"*) [ "${__st%% *}" != Z ] && c=$((c+1)) ;; esac`) + `echo "$c"`
	var n int
	_, err := fmt.Sscan(sh(t, sb, script), &n)
	require.NoError(t, err)
	return n
}

// octalPrintf is a printf command that prints b verbatim with one builtin
// call (no fork per byte).
func octalPrintf(b []byte) string {
	var sb strings.Builder
	sb.WriteString("printf '")
	for _, c := range b {
		fmt.Fprintf(&sb, "\\%03o", c)
	}
	sb.WriteString("'")
	return sb.String()
}

// eventually polls cond every 100ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// payload returns n deterministic pseudo-random bytes (every byte value
// occurs), so a binary round trip is checked byte for byte.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// genReader yields n deterministic bytes without holding them, for streams
// larger than a row wants in memory.
type genReader struct {
	left int64
	x    uint32
}

func newGenReader(n int64, seed byte) *genReader {
	return &genReader{left: n, x: uint32(seed)*2654435761 + 1}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	for i := range p {
		g.x ^= g.x << 13
		g.x ^= g.x >> 17
		g.x ^= g.x << 5
		p[i] = byte(g.x)
	}
	g.left -= int64(len(p))
	return len(p), nil
}

// failReader fails the row if anything reads it: a refusal that must come
// before the source is touched (C-STREAM-1).
type failReader struct{ t *testing.T }

func (f failReader) Read([]byte) (int, error) {
	f.t.Errorf("the source was read although the write had to be refused first")
	return 0, errors.New("porttest: source must not be read")
}

// errAfterReader yields n bytes, then fails: a transfer that dies part way.
type errAfterReader struct {
	r   io.Reader
	err error
}

func (e *errAfterReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, e.err
	}
	return n, err
}

// requireNotWritable requires a *PathNotWritableError whose reason contains
// reason (the sandbox's strerror text).
func requireNotWritable(t *testing.T, err error, reason string) {
	t.Helper()
	require.ErrorIs(t, err, sandbox.ErrNotWritable)
	var pe *sandbox.PathNotWritableError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Reason, reason, "reason of %v", err)
}

// requireNoHandle fails when a refused call returned a handle: an interface
// holding even a typed nil is one.
func requireNoHandle(t *testing.T, sb ports.Sandbox, what string) {
	t.Helper()
	if sb != nil {
		t.Fatalf("%s returned a handle (%T) with its error", what, sb)
	}
}

// unrepresentable requires that none of ids parses as a session id. A bad
// id was once a row of its own against each port; domain.ID makes it
// unrepresentable (a non-zero ID is valid by construction), so the port's
// refusal became a compile-time guarantee and the rows keep only the zero
// ID, plus this check that the edges' parse refuses the old values.
func unrepresentable(t *testing.T, ids ...string) {
	t.Helper()
	for _, s := range ids {
		_, err := domain.ParseSessionID(s)
		require.ErrorIs(t, err, domain.ErrInvalidID, "%q", s)
	}
}
