package sessionstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
	"github.com/stretchr/testify/require"
)

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, url string
		key       []byte
		want      string
	}{
		{"unknown scheme", "mysql://user:hunter2@db/x", testKey, "database url: must start with sqlite:// or postgres://"},
		{"empty", "", testKey, "database url"},
		{"short key", "sqlite://" + filepath.Join(dir, "a.db"), testKey[:16], "secrets key: must be 32 bytes, got 16"},
		{"long key", "sqlite://" + filepath.Join(dir, "a.db"), append(testKey, 0), "secrets key: must be 32 bytes, got 33"},
		{"no key", "sqlite://" + filepath.Join(dir, "a.db"), nil, "secrets key: must be 32 bytes, got 0"},
		{"empty path", "sqlite://", testKey, "sqlite: path is empty"},
		{"question mark", "sqlite://" + filepath.Join(dir, "a?b.db"), testKey, "must not contain '?'"},
		{"missing directory", "sqlite://" + filepath.Join(dir, "no", "such", "a.db"), testKey, "sqlite: create schema"},
		{"postgres short key", "postgres://user:hunter2@127.0.0.1:1/x", testKey[:1], "secrets key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(context.Background(), tc.url, tc.key)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, s)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestSQLiteReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, "sqlite://"+path, testKey)
	require.NoError(t, err)
	rec := session.Session{ID: domain.NewID("ses"), Credentials: []session.Credential{{
		ID: "c", Name: "N", Secret: gatewire.NewSecret("v-secret"), AllowedHosts: []string{"h.example"}, Locations: []gatewire.Location{gatewire.LocationHeaders},
	}}}
	tok := s.Generate()
	require.NoError(t, s.PutSession(ctx, rec))
	require.NoError(t, s.Persist(ctx, rec.ID, tok))
	require.NoError(t, s.Close())

	// The schema is created idempotently: reopening keeps every row.
	s, err = OpenSQLite(ctx, path, testKey)
	require.NoError(t, err)
	got, err := s.GetSession(ctx, rec.ID)
	require.NoError(t, err)
	require.Equal(t, rec, got)
	sid, err := s.Authenticate(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, rec.ID, sid)
	require.NoError(t, s.Close())

	// Another key opens the store but not its secrets.
	other := append([]byte(nil), testKey...)
	other[0] ^= 1
	s, err = OpenSQLite(ctx, path, other)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	_, err = s.GetSession(ctx, rec.ID)
	require.ErrorIs(t, err, session.ErrDecrypt)
}

func TestStoreErrorsAfterClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "store.db"), testKey)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	sid, tok := domain.NewID("ses"), s.Generate()
	require.ErrorContains(t, s.Persist(ctx, sid, tok), "sqlite: persist gate token of session "+sid.String())
	require.ErrorContains(t, s.Revoke(ctx, sid), "sqlite: revoke gate token")
	_, err = s.Authenticate(ctx, tok)
	require.ErrorContains(t, err, "sqlite: authenticate gate token")
	require.NotContains(t, err.Error(), tok[4:])
	require.ErrorContains(t, s.PutSession(ctx, session.Session{ID: sid}), "sqlite: put session")
	_, err = s.GetSession(ctx, sid)
	require.ErrorContains(t, err, "sqlite: get session")
	require.ErrorContains(t, s.DeleteSession(ctx, sid), "sqlite: delete session")
}
