package porttest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
	"github.com/stretchr/testify/require"
)

// SessionStoreHarness is what a ports.SessionStore implementation hands
// RunSessionStore: the store and two hooks below the port, which the suite
// needs to prove what is (not) stored at rest.
type SessionStoreHarness struct {
	// Store is the implementation under test. Rows use fresh session ids, so
	// one database may serve every row.
	Store ports.SessionStore
	// Dump returns everything the store keeps at rest (the database files,
	// or every column of every row as text). The suite searches it for
	// plaintext tokens and secrets, and for their hashes and names to prove
	// the dump sees the data.
	Dump func(t *testing.T) []byte
	// CopySecret overwrites the stored ciphertext of credential credentialID
	// in session to with the one stored for it in session from.
	CopySecret func(t *testing.T, from, to domain.ID, credentialID string)
}

// RunSessionStore runs the conformance suite of ports.SessionStore (C-GATE-2,
// C-GATE-4 and the session records). open is called once per row and may
// return a store shared between rows.
func RunSessionStore(t *testing.T, open func(t *testing.T) SessionStoreHarness) {
	t.Helper()
	rows := []struct {
		name string
		run  func(t *testing.T, h SessionStoreHarness)
	}{
		{"generate-has-no-effect", tsGenerate},
		{"persist-authenticates", tsPersistAuthenticates},
		{"persist-revokes-previous", tsPersistRevokesPrevious},
		{"revoke-is-immediate", tsRevoke},
		{"token-bound-to-one-session", tsTokenBoundToOneSession},
		{"plaintext-token-never-stored", tsTokenNotStored},
		{"concurrent-persists-leave-one-token", tsConcurrentPersist},
		{"bad-input-refused", tsBadInput},
		{"session-round-trip", tsSessionRoundTrip},
		{"secrets-not-stored-in-clear", tsSecretsNotStored},
		{"moved-ciphertext-fails", tsMovedCiphertext},
		{"missing-and-deleted-sessions", tsDeleteSession},
		{"activity-moves-forward", tsActivity},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			r.run(t, open(t))
		})
	}
}

// tsUnauthorized asserts that token does not authenticate.
func tsUnauthorized(t *testing.T, s ports.SessionStore, token string) {
	t.Helper()
	sid, err := s.Authenticate(context.Background(), token)
	require.ErrorIs(t, err, gatewire.ErrUnauthorized)
	require.Empty(t, sid)
	if len(token) > 8 {
		require.NotContains(t, err.Error(), token[4:], "the error must not quote the token")
	}
}

// tsAuthenticates asserts that token authenticates as sid.
func tsAuthenticates(t *testing.T, s ports.SessionStore, token string, sid domain.ID) {
	t.Helper()
	got, err := s.Authenticate(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, sid, got)
}

func tsGenerate(t *testing.T, h SessionStoreHarness) {
	a, b := h.Store.Generate(), h.Store.Generate()
	require.NotEqual(t, a, b)
	for _, tok := range []string{a, b} {
		require.NoError(t, gatewire.ValidateToken(tok))
		tsUnauthorized(t, h.Store, tok)
	}
}

func tsPersistAuthenticates(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	sid := domain.NewID("ses")
	tok := h.Store.Generate()
	require.NoError(t, h.Store.Persist(ctx, sid, tok))
	tsAuthenticates(t, h.Store, tok, sid)
	require.NoError(t, h.Store.Persist(ctx, sid, tok), "persisting the live token again is idempotent")
	tsAuthenticates(t, h.Store, tok, sid)
	tsUnauthorized(t, h.Store, h.Store.Generate())
}

func tsPersistRevokesPrevious(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	sid, other := domain.NewID("ses"), domain.NewID("ses")
	first, second, others := h.Store.Generate(), h.Store.Generate(), h.Store.Generate()
	require.NoError(t, h.Store.Persist(ctx, sid, first))
	require.NoError(t, h.Store.Persist(ctx, other, others))
	require.NoError(t, h.Store.Persist(ctx, sid, second))
	tsUnauthorized(t, h.Store, first)
	tsAuthenticates(t, h.Store, second, sid)
	tsAuthenticates(t, h.Store, others, other)
}

func tsRevoke(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	sid, other := domain.NewID("ses"), domain.NewID("ses")
	tok, others := h.Store.Generate(), h.Store.Generate()
	require.NoError(t, h.Store.Persist(ctx, sid, tok))
	require.NoError(t, h.Store.Persist(ctx, other, others))
	require.NoError(t, h.Store.Revoke(ctx, sid))
	tsUnauthorized(t, h.Store, tok)
	tsAuthenticates(t, h.Store, others, other)
	require.NoError(t, h.Store.Revoke(ctx, sid), "revoking again is a no-op")
	require.NoError(t, h.Store.Revoke(ctx, domain.NewID("ses")), "revoking an unknown session is a no-op")
	fresh := h.Store.Generate()
	require.NoError(t, h.Store.Persist(ctx, sid, fresh))
	tsAuthenticates(t, h.Store, fresh, sid)
	tsUnauthorized(t, h.Store, tok)
}

func tsTokenBoundToOneSession(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	sid, other := domain.NewID("ses"), domain.NewID("ses")
	tok := h.Store.Generate()
	require.NoError(t, h.Store.Persist(ctx, sid, tok))
	err := h.Store.Persist(ctx, other, tok)
	require.Error(t, err, "one token never authenticates two sessions")
	require.NotContains(t, err.Error(), tok[4:])
	tsAuthenticates(t, h.Store, tok, sid)
}

func tsTokenNotStored(t *testing.T, h SessionStoreHarness) {
	sid := domain.NewID("ses")
	tok := h.Store.Generate()
	require.NoError(t, h.Store.Persist(context.Background(), sid, tok))
	dump := h.Dump(t)
	require.True(t, bytes.Contains(dump, []byte(gatewire.TokenHash(tok))), "the dump must show the stored hash")
	require.False(t, bytes.Contains(dump, []byte(tok[len(tok)-40:])), "the plaintext token is stored")
}

func tsConcurrentPersist(t *testing.T, h SessionStoreHarness) {
	const n = 8
	sid := domain.NewID("ses")
	tokens := make([]string, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range tokens {
		tokens[i] = h.Store.Generate()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Store.Persist(context.Background(), sid, tokens[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	live := 0
	for _, tok := range tokens {
		if got, err := h.Store.Authenticate(context.Background(), tok); err == nil {
			require.Equal(t, sid, got)
			live++
		} else {
			require.ErrorIs(t, err, gatewire.ErrUnauthorized)
		}
	}
	require.Equal(t, 1, live, "exactly one live token per session")
}

func tsBadInput(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	good, tok := domain.NewID("ses"), h.Store.Generate()
	unrepresentable(t, "Ses_upper", "ses-dash", "_lead", "x'; DROP TABLE sandgate_sessions; --", strings.Repeat("a", 55))
	var unset domain.ID
	require.ErrorIs(t, h.Store.Persist(ctx, unset, tok), domain.ErrInvalidID)
	require.ErrorIs(t, h.Store.Revoke(ctx, unset), domain.ErrInvalidID)
	_, err := h.Store.GetSession(ctx, unset)
	require.ErrorIs(t, err, domain.ErrInvalidID)
	require.ErrorIs(t, h.Store.DeleteSession(ctx, unset), domain.ErrInvalidID)
	require.ErrorIs(t, h.Store.PutSession(ctx, session.Session{ID: unset}), domain.ErrInvalidID)
	badTokens := []string{"", "sgt_", tok[4:], "sgx_" + tok[4:], tok[:len(tok)-1], tok + "0", strings.ToUpper(tok), tok[:len(tok)-1] + "'"}
	for _, bad := range badTokens {
		err := h.Store.Persist(ctx, good, bad)
		require.ErrorIs(t, err, gatewire.ErrInvalidToken)
		if len(bad) > 8 {
			require.NotContains(t, err.Error(), bad[4:])
		}
		tsUnauthorized(t, h.Store, bad)
	}
	tsUnauthorized(t, h.Store, tok)
	rec := tsSession(good)
	rec.Credentials[0].Locations = []gatewire.Location{"query"}
	err = h.Store.PutSession(ctx, rec)
	require.ErrorIs(t, err, session.ErrInvalid)
	require.ErrorContains(t, err, "credentials[0].locations[0]")
	require.NotContains(t, err.Error(), rec.Credentials[0].Secret.Reveal())
	_, err = h.Store.GetSession(ctx, good)
	require.ErrorIs(t, err, session.ErrNotFound, "an invalid record stores nothing")
}

// tsSession is a record with two credentials whose secrets are unique to
// this call.
func tsSession(sid domain.ID) session.Session {
	return session.Session{
		ID:         sid,
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"api.example.com", "*.example.org", "10.0.0.0/8"}},
		Credentials: []session.Credential{
			{
				ID: "cred_gh", Name: "GITHUB_TOKEN", Secret: gatewire.NewSecret("ghp_" + gatewire.NewToken()),
				AllowedHosts: []string{"api.github.com"}, Locations: []gatewire.Location{gatewire.LocationHeaders},
			},
			{
				ID: "cred_ai", Name: "OPENAI_API_KEY", Secret: gatewire.NewSecret("sk-" + gatewire.NewToken() + " with 'quotes' and ünïcode"),
				AllowedHosts: []string{"api.openai.com", "*.openai.com"}, Locations: []gatewire.Location{gatewire.LocationBody, gatewire.LocationHeaders},
			},
		},
		Image: "registry.example/agent:1.2", Workdir: "/srv/work",
		// The store keeps milliseconds.
		LastActive: time.UnixMilli(time.Now().UnixMilli()).UTC(),
	}
}

func tsSessionRoundTrip(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	rec := tsSession(domain.NewID("ses"))
	require.NoError(t, h.Store.PutSession(ctx, rec))
	got, err := h.Store.GetSession(ctx, rec.ID)
	require.NoError(t, err)
	require.Equal(t, rec, got)

	// A put replaces the record whole: fewer credentials, another policy.
	rec.Networking = domain.Networking{Type: domain.NetUnrestricted}
	rec.Credentials = rec.Credentials[1:]
	rec.Credentials[0].Secret = gatewire.NewSecret("rotated secret")
	rec.Image, rec.Workdir, rec.LastActive = "debian:bookworm", "/workspace", rec.LastActive.Add(time.Second)
	require.NoError(t, h.Store.PutSession(ctx, rec))
	got, err = h.Store.GetSession(ctx, rec.ID)
	require.NoError(t, err)
	require.Equal(t, rec, got)

	bare := session.Session{ID: domain.NewID("ses")}
	require.NoError(t, h.Store.PutSession(ctx, bare))
	got, err = h.Store.GetSession(ctx, bare.ID)
	require.NoError(t, err)
	require.Equal(t, bare, got)
}

func tsSecretsNotStored(t *testing.T, h SessionStoreHarness) {
	rec := tsSession(domain.NewID("ses"))
	require.NoError(t, h.Store.PutSession(context.Background(), rec))
	dump := h.Dump(t)
	require.True(t, bytes.Contains(dump, []byte(rec.ID.String())), "the dump must show the stored record")
	require.True(t, bytes.Contains(dump, []byte("OPENAI_API_KEY")), "the dump must show the stored record")
	for _, c := range rec.Credentials {
		secret := c.Secret.Reveal()
		require.False(t, bytes.Contains(dump, []byte(secret[:20])), "secret of %s stored in clear", c.ID)
	}
}

func tsMovedCiphertext(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	from, to := tsSession(domain.NewID("ses")), tsSession(domain.NewID("ses"))
	require.NoError(t, h.Store.PutSession(ctx, from))
	require.NoError(t, h.Store.PutSession(ctx, to))
	h.CopySecret(t, from.ID, to.ID, "cred_gh")
	_, err := h.Store.GetSession(ctx, to.ID)
	require.ErrorIs(t, err, session.ErrDecrypt)
	require.NotContains(t, err.Error(), from.Credentials[0].Secret.Reveal())
	got, err := h.Store.GetSession(ctx, from.ID)
	require.NoError(t, err)
	require.Equal(t, from, got)
}

func tsDeleteSession(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	_, err := h.Store.GetSession(ctx, domain.NewID("ses"))
	require.ErrorIs(t, err, session.ErrNotFound)
	require.NoError(t, h.Store.DeleteSession(ctx, domain.NewID("ses")), "deleting an unknown session is a no-op")

	rec, keep := tsSession(domain.NewID("ses")), tsSession(domain.NewID("ses"))
	tok, keepTok := h.Store.Generate(), h.Store.Generate()
	for _, r := range []struct {
		rec session.Session
		tok string
	}{{rec, tok}, {keep, keepTok}} {
		require.NoError(t, h.Store.PutSession(ctx, r.rec))
		require.NoError(t, h.Store.Persist(ctx, r.rec.ID, r.tok))
	}
	require.NoError(t, h.Store.DeleteSession(ctx, rec.ID))
	_, err = h.Store.GetSession(ctx, rec.ID)
	require.ErrorIs(t, err, session.ErrNotFound)
	tsUnauthorized(t, h.Store, tok)
	got, err := h.Store.GetSession(ctx, keep.ID)
	require.NoError(t, err)
	require.Equal(t, keep, got)
	tsAuthenticates(t, h.Store, keepTok, keep.ID)
	require.NoError(t, h.Store.DeleteSession(ctx, rec.ID), "deleting twice is a no-op")
}

func tsActivity(t *testing.T, h SessionStoreHarness) {
	ctx := context.Background()
	rec, bare := tsSession(domain.NewID("ses")), session.Session{ID: domain.NewID("ses")}
	require.NoError(t, h.Store.PutSession(ctx, rec))
	require.NoError(t, h.Store.PutSession(ctx, bare))
	all, err := h.Store.Activity(ctx)
	require.NoError(t, err)
	require.Equal(t, rec.LastActive, all[rec.ID])
	require.Contains(t, all, bare.ID, "a record without activity is listed")
	require.True(t, all[bare.ID].IsZero())

	later := rec.LastActive.Add(90 * time.Second)
	require.NoError(t, h.Store.Touch(ctx, rec.ID, later))
	require.NoError(t, h.Store.Touch(ctx, rec.ID, rec.LastActive), "an older touch is a no-op")
	require.NoError(t, h.Store.Touch(ctx, bare.ID, later))
	got, err := h.Store.GetSession(ctx, rec.ID)
	require.NoError(t, err)
	require.Equal(t, later, got.LastActive)
	all, err = h.Store.Activity(ctx)
	require.NoError(t, err)
	require.Equal(t, later, all[rec.ID])
	require.Equal(t, later, all[bare.ID])

	ghost := domain.NewID("ses")
	require.NoError(t, h.Store.Touch(ctx, ghost, later), "touching a session without a record is a no-op")
	all, err = h.Store.Activity(ctx)
	require.NoError(t, err)
	require.NotContains(t, all, ghost, "a touch does not create a record")
	require.ErrorIs(t, h.Store.Touch(ctx, domain.ID{}, later), domain.ErrInvalidID)
}
