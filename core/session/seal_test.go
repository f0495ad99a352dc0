package session

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/stretchr/testify/require"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeyLen) }

func TestNewSealerKeySize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		_, err := NewSealer(make([]byte, n))
		require.ErrorContains(t, err, "must be 32 bytes", n)
	}
	s, err := NewSealer(testKey(1))
	require.NoError(t, err)
	require.NotNil(t, s)
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	key := testKey(7)
	for _, in := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key), " " + hex.EncodeToString(key) + "\n"} {
		got, err := ParseKey(in)
		require.NoError(t, err, in)
		require.Equal(t, key, got)
	}
	for _, in := range []string{"", "short", hex.EncodeToString(key[:31]), base64.StdEncoding.EncodeToString(key[:16]), strings.Repeat("z", 64)} {
		_, err := ParseKey(in)
		require.ErrorContains(t, err, "secrets key: want 64 hex characters", in)
		if in != "" {
			require.NotContains(t, err.Error(), in)
		}
	}
}

func TestSealRoundTrip(t *testing.T) {
	t.Parallel()
	s, err := NewSealer(testKey(1))
	require.NoError(t, err)
	secret := gatewire.NewSecret("s3cr3t value")
	a := s.Seal(testSID, "cred_1", secret)
	b := s.Seal(testSID, "cred_1", secret)
	require.NotEqual(t, a, b, "a random nonce per value")
	require.NotContains(t, a, secret.Reveal())
	require.True(t, strings.HasPrefix(a, "v1:"))
	got, err := s.Open(testSID, "cred_1", a)
	require.NoError(t, err)
	require.Equal(t, secret, got)
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	s, err := NewSealer(testKey(1))
	require.NoError(t, err)
	other, err := NewSealer(testKey(2))
	require.NoError(t, err)
	sealed := s.Seal(testSID, "cred_1", gatewire.NewSecret("secret"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	require.NoError(t, err)
	raw[len(raw)-1] ^= 1
	tampered := "v1:" + base64.StdEncoding.EncodeToString(raw)
	for _, tc := range []struct {
		name   string
		sealer *Sealer
		sid    domain.ID
		cred   string
		sealed string
		want   string
	}{
		{"other session", s, domain.MustParseSessionID("ses_other"), "cred_1", sealed, "authentication failed"},
		{"other credential", s, testSID, "cred_2", sealed, "authentication failed"},
		{"other key", other, testSID, "cred_1", sealed, "authentication failed"},
		{"tampered", s, testSID, "cred_1", tampered, "authentication failed"},
		{"no version", s, testSID, "cred_1", strings.TrimPrefix(sealed, "v1:"), "unknown format"},
		{"not base64", s, testSID, "cred_1", "v1:!!!", "malformed ciphertext"},
		{"too short", s, testSID, "cred_1", "v1:AAAA", "malformed ciphertext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.sealer.Open(tc.sid, tc.cred, tc.sealed)
			require.ErrorIs(t, err, ErrDecrypt)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret\"")
		})
	}
}

func TestAdditionalDataUnambiguous(t *testing.T) {
	t.Parallel()
	require.NotEqual(t, additionalData(domain.MustParseSessionID("a_b"), "c"), additionalData(domain.MustParseSessionID("a"), "b_c"))
	// An id cannot hold a NUL (domain.ID), a credential id can.
	require.NotEqual(t, additionalData(domain.MustParseSessionID("ses_a"), "x\x00y"), additionalData(domain.MustParseSessionID("ses_a"), "x"))
}
