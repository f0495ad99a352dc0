package porttest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// lifeRows: Attach, Owned, Reap, Destroy (CONTRACT §3).
func lifeRows() []row {
	return []row{
		{"C-ATT-1/running-same-sandbox", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			orig := s.provision(t, spec)
			att, err := s.h.Provider.Attach(ctx(t), spec.SessionID)
			require.NoError(t, err)
			require.Equal(t, orig.ID(), att.ID())
			require.NoError(t, att.WriteFile(ctx(t), "/workspace/via-attach", []byte("seen")))
			require.Equal(t, "seen", string(readBack(t, orig, "/workspace/via-attach")))
		}},
		{"C-ATT-1/never-provisioned", func(t *testing.T, s *suite) {
			s.requireAbsent(t, s.sid(t))
		}},
		{"C-ATT-1/reaped", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			require.NoError(t, s.h.Provider.Reap(ctx(t), spec.SessionID))
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-OWN-1/running-member", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			require.Contains(t, s.owned(t), spec.SessionID)
		}},
		{"C-OWN-1/distinct-ids", func(t *testing.T, s *suite) {
			a, b := s.spec(t), s.spec(t)
			s.provision(t, a)
			s.provision(t, b)
			seen := map[domain.ID]int{}
			for _, id := range s.owned(t) {
				seen[id]++
			}
			require.Equal(t, 1, seen[a.SessionID])
			require.Equal(t, 1, seen[b.SessionID])
			for id, n := range seen {
				require.Equal(t, 1, n, "owned lists %s %d times", id, n)
			}
		}},
		{"C-REAP-1/removes-everything", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			require.NoError(t, s.h.Provider.Reap(ctx(t), spec.SessionID))
			s.requireAbsent(t, spec.SessionID)
			rc, err := s.h.Provider.Export(ctx(t), spec.SessionID, "/workspace")
			requireNotFound(t, err, "export after reap")
			require.Nil(t, rc)
			_, err = sb.Exec(ctx(t), sandbox.ExecRequest{Command: "true"})
			requireNotFound(t, err, "exec on a reaped sandbox's handle")
		}},
		{"C-REAP-1/twice-is-noop", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			require.NoError(t, s.h.Provider.Reap(ctx(t), spec.SessionID))
			require.NoError(t, s.h.Provider.Reap(ctx(t), spec.SessionID))
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-REAP-1/unknown-session-noop", func(t *testing.T, s *suite) {
			require.NoError(t, s.h.Provider.Reap(ctx(t), s.sid(t)))
		}},
		{"C-REAP-1/revoker-called-first", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			s.provision(t, spec)
			r := &recordingTokens{check: func(c context.Context, id domain.ID) error {
				_, err := s.h.Provider.Attach(c, id)
				return err
			}}
			p := s.h.WithTokens(r)
			require.NoError(t, p.Reap(ctx(t), spec.SessionID))
			require.Equal(t, []domain.ID{spec.SessionID}, r.calls(), "one revoke per Reap")
			require.NoError(t, r.checked(), "the sandbox must still exist when the token is revoked")
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-REAP-1/failing-revoker-aborts", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			sh(t, sb, "echo kept > /workspace/kept")
			errRevoke := errors.New("porttest: revoke refused")
			r := &recordingTokens{fail: errRevoke}
			require.ErrorIs(t, s.h.WithTokens(r).Reap(ctx(t), spec.SessionID), errRevoke)
			att, err := s.h.Provider.Attach(ctx(t), spec.SessionID)
			require.NoError(t, err, "a failed revoke must remove nothing")
			require.Equal(t, sb.ID(), att.ID())
			require.Equal(t, "kept\n", string(readBack(t, att, "/workspace/kept")))
		}},
		{"C-DES-1/idempotent-then-not-found", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			sb := s.provision(t, spec)
			require.NoError(t, sb.Destroy(ctx(t)))
			require.NoError(t, sb.Destroy(ctx(t)), "destroying twice is not an error")
			requireGoneHandle(t, sb)
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-DES-1/other-handle-not-found", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			a := s.provision(t, spec)
			b, err := s.h.Provider.Attach(ctx(t), spec.SessionID)
			require.NoError(t, err)
			require.NoError(t, a.Destroy(ctx(t)))
			requireGoneHandle(t, b)
			require.NoError(t, b.Destroy(ctx(t)))
		}},
	}
}

// requireGoneHandle requires ErrNotFound from every data method of sb.
func requireGoneHandle(t *testing.T, sb ports.Sandbox) {
	t.Helper()
	c := ctx(t)
	_, err := sb.Exec(c, sandbox.ExecRequest{Command: "true"})
	requireNotFound(t, err, "Exec")
	_, err = sb.Exec(c, sandbox.ExecRequest{Command: "true", Timeout: time.Second})
	requireNotFound(t, err, "Exec with a timeout")
	_, err = sb.ReadFile(c, "/etc/hostname")
	requireNotFound(t, err, "ReadFile")
	rc, _, err := sb.ReadFileStream(c, "/etc/hostname", 1<<20)
	requireNotFound(t, err, "ReadFileStream")
	require.Nil(t, rc)
	requireNotFound(t, sb.WriteFile(c, "/workspace/x", []byte("x")), "WriteFile")
	requireNotFound(t, sb.WriteFileStream(c, "/workspace/x", bytes.NewReader([]byte("x")), 1), "WriteFileStream")
	requireNotFound(t, sb.WriteFiles(c, []sandbox.FileWrite{{Path: "/workspace/x", Data: []byte("x")}}), "WriteFiles")
}
