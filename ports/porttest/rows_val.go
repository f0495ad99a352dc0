package porttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// valRows: validation before side effects (CONTRACT §1).
func valRows() []row {
	return []row{
		{"C-VAL-1/zero-session-id", func(t *testing.T, s *suite) {
			refused(t, s, sandbox.Spec{Image: s.h.Image}, "session")
		}},
		{"C-VAL-1/bad-session-id-chars", func(t *testing.T, s *suite) {
			// A Spec cannot carry these: see unrepresentable.
			unrepresentable(t, "Ses_UPPER", "ses-dash", "ses_../x", "ses x", "_ses", "ses;rm")
		}},
		{"C-VAL-1/invalid-id-refused-by-every-method", func(t *testing.T, s *suite) {
			p := s.h.Provider
			unrepresentable(t, "Bad ID")
			var unset domain.ID
			sb, err := p.Attach(ctx(t), unset)
			require.Error(t, err, "attach the zero id")
			requireNoHandle(t, sb, "the call")
			require.Error(t, p.Reap(ctx(t), unset), "reap the zero id")
			rc, err := p.Export(ctx(t), unset, "/workspace")
			require.Error(t, err, "export the zero id")
			require.Nil(t, rc)
		}},
		{"C-VAL-1/empty-image", func(t *testing.T, s *suite) {
			id := s.sid(t)
			refused(t, s, sandbox.Spec{SessionID: id}, "image")
			s.requireAbsent(t, id)
		}},
		{"C-VAL-1/bad-env-key-then-valid-env", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			for _, k := range []string{"A=B", "", "1A", "A-B", "A B", "Ä"} {
				spec.Env = map[string]string{"GOOD": "1", k: "x"}
				refused(t, s, spec, "env")
				s.requireAbsent(t, spec.SessionID)
			}
			spec.Env = map[string]string{"A": "fresh value"}
			sb := s.provision(t, spec)
			require.Equal(t, "fresh value", sh(t, sb, `printf %s "$A"`))
		}},
		{"C-VAL-1/gated-as-gate-uid", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			uid := int64(gatewire.UID)
			tokens := &recordingTokens{}
			spec.Hardening.RunAsUser = &uid
			spec.Gate = &sandbox.GateSpec{Image: s.h.Image, ControlplaneURL: "http://127.0.0.1:9"}
			refusedBy(t, s.h.WithTokens(tokens), spec, "run_as_user")
			require.Zero(t, tokens.generated.Load(), "a token was generated for a refused spec")
			require.Zero(t, tokens.persisted.Load(), "a token was persisted for a refused spec")
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-VAL-1/gated-without-tokens", func(t *testing.T, s *suite) {
			// The gate's token is minted by the provider's own gate tokens
			// (its options), not by the Spec: without them a gated spec is
			// refused before anything is created.
			spec := s.spec(t)
			spec.Gate = &sandbox.GateSpec{Image: s.h.Image, ControlplaneURL: "http://127.0.0.1:9"}
			refusedBy(t, s.h.WithTokens(nil), spec, "gate")
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-VAL-1/bad-workdir", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			for _, w := range []string{"relative", "/", "/a/../b", "/proc/x", "/a\nb"} {
				spec.Workdir = w
				refused(t, s, spec, "workdir")
			}
			s.requireAbsent(t, spec.SessionID)
		}},
		{"C-VAL-2/reserved-names-accepted", func(t *testing.T, s *suite) {
			spec := s.spec(t)
			spec.Env = map[string]string{"HTTP_PROXY": "http://127.0.0.1:9", "no_proxy": "x.example", "ENV": "/nonexistent"}
			sb := s.provision(t, spec)
			require.Equal(t, "http://127.0.0.1:9|x.example|/nonexistent",
				sh(t, sb, `printf '%s|%s|%s' "$HTTP_PROXY" "$no_proxy" "$ENV"`))
		}},
		{"C-VAL-3/env-values-verbatim", func(t *testing.T, s *suite) {
			want := map[string]string{
				"SPACES": "a b  c", "DOLLAR": "$lit", "SUBST": "$(VAR)", "BRACE": "${HOME}",
				"QUOTES": `'single' "double" \back`, "NEWLINE": "line1\nline2", "TICK": "`id`",
				"EMPTY": "", "EQ": "k=v=w", "UTF8": "grüße", "GLOB": "*",
			}
			spec := s.spec(t)
			spec.Env = want
			sb := s.provision(t, spec)
			got := parseEnv0(sh(t, sb, "env -0"))
			for k, v := range want {
				require.Contains(t, got, k)
				require.Equal(t, v, got[k], "value of %s", k)
			}
			// And through a shell expansion, which is how tools see them.
			require.Equal(t, "$(VAR)", sh(t, sb, `printf %s "$SUBST"`))
		}},
	}
}

// refused provisions spec, requires an error whose text names field, and
// a nil handle.
func refused(t *testing.T, s *suite, spec sandbox.Spec, field string) {
	t.Helper()
	refusedBy(t, s.h.Provider, spec, field)
}

// refusedBy is refused on provider p.
func refusedBy(t *testing.T, p ports.Provider, spec sandbox.Spec, field string) {
	t.Helper()
	sb, err := p.Provision(ctx(t), spec)
	require.Error(t, err, "spec %+v must be refused", spec)
	require.Contains(t, strings.ToLower(err.Error()), field, "the error must name the field")
	requireNoHandle(t, sb, "a refused provision")
}

// parseEnv0 parses `env -0` output.
func parseEnv0(out string) map[string]string {
	m := map[string]string{}
	for _, kv := range bytes.Split([]byte(out), []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte("="))
		if ok {
			m[string(k)] = string(v)
		}
	}
	return m
}
