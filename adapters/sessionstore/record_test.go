package sessionstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/core/session"
)

// pinnedSealed is "secretvalue1" sealed under testKey for ses_pinned's
// cred_1 by an earlier release: records already stored must keep opening.
const pinnedSealed = "v1:59TztMjRyLJBo86YGoD9Uw0qrtG/1pPcQ7T+Zz5Z4qyVHCoWuG+y+w=="

// TestStoredRecordIsPinned: the rows a session record is stored as, byte
// for byte (the sealed secret by what it opens to: its nonce is random),
// and a row an earlier release sealed reads back whole.
func TestStoredRecordIsPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "pinned.db"), testKey)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	rec := session.Session{
		ID:         domain.MustParseSessionID("ses_pinned"),
		Networking: domain.Networking{Type: domain.NetLimited, AllowedHosts: []string{"a.example"}},
		Credentials: []session.Credential{{
			ID: "cred_1", Name: "API_KEY", Secret: gatewire.NewSecret("secretvalue1"),
			AllowedHosts: []string{"a.example", "*.b.example"},
			Locations:    []gatewire.Location{gatewire.LocationBody, gatewire.LocationHeaders},
		}},
	}
	require.NoError(t, s.PutSession(ctx, rec))

	var networking, id, name, sealed, hosts, locations string
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT networking FROM sandgate_sessions WHERE session_id = 'ses_pinned'`).Scan(&networking))
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT credential_id, name, secret_sealed, allowed_hosts, locations
		FROM sandgate_credentials WHERE session_id = 'ses_pinned'`).Scan(&id, &name, &sealed, &hosts, &locations))
	//nolint:testifylint // byte for byte, not JSONEq: the stored text is pinned
	require.Equal(t, `{"type":"limited","allowed_hosts":["a.example"]}`, networking)
	require.Equal(t, []string{"cred_1", "API_KEY", `["a.example","*.b.example"]`, `["body","headers"]`}, []string{id, name, hosts, locations})
	sealer, err := session.NewSealer(testKey)
	require.NoError(t, err)
	secret, err := sealer.Open(domain.MustParseSessionID("ses_pinned"), "cred_1", sealed)
	require.NoError(t, err)
	require.Equal(t, rec.Credentials[0].Secret, secret)

	_, err = s.db.ExecContext(ctx, `UPDATE sandgate_credentials SET secret_sealed = '`+pinnedSealed+`' WHERE session_id = 'ses_pinned'`)
	require.NoError(t, err)
	got, err := s.GetSession(ctx, domain.MustParseSessionID("ses_pinned"))
	require.NoError(t, err)
	require.Equal(t, rec, got)
}
