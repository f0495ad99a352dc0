package sessionstore

import (
	"bytes"
	"context"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports/porttest"
	"github.com/stretchr/testify/require"
)

// testKey is a fixed secrets key for tests.
var testKey = bytes.Repeat([]byte{0x5a}, 32)

// harness wraps s in the conformance suite's harness; dump reads what the
// database keeps at rest.
func harness(t *testing.T, s *Store, dump func(t *testing.T) []byte) porttest.SessionStoreHarness {
	t.Helper()
	return porttest.SessionStoreHarness{
		Store: s,
		Dump:  dump,
		CopySecret: func(t *testing.T, from, to domain.ID, credentialID string) {
			t.Helper()
			var sealed string
			q := `SELECT secret_sealed FROM sandgate_credentials WHERE session_id = $1 AND credential_id = $2`
			require.NoError(t, s.db.QueryRowContext(context.Background(), s.d.q(q), from.String(), credentialID).Scan(&sealed))
			u := `UPDATE sandgate_credentials SET secret_sealed = $1 WHERE session_id = $2 AND credential_id = $3`
			res, err := s.db.ExecContext(context.Background(), s.d.q(u), sealed, to.String(), credentialID)
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
		},
	}
}
