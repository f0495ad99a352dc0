package gatewire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	c := validConfig()
	s := c.Credentials[0].Secret
	require.Equal(t, testSecret, s.Reveal())
	require.Equal(t, len(testSecret), s.Len())
	require.False(t, s.IsZero())
	require.True(t, Secret{}.IsZero())
	var ptr = &c
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		for _, arg := range []any{s, &s, c.Credentials[0], c, ptr, c.Credentials, []Secret{s}, map[string]Secret{"k": s}} {
			out := fmt.Sprintf(format, arg)
			require.NotContains(t, out, testSecret, "%s of %T", format, arg)
			require.NotContains(t, out, fmt.Sprintf("%x", testSecret), "%s of %T", format, arg)
		}
	}
	require.Contains(t, fmt.Sprintf("%+v", c), redacted)
	require.Equal(t, redacted, s.String())
	require.Equal(t, redacted, s.GoString())
	require.Equal(t, redacted, fmt.Sprint(s))
}

func TestSecretNeverLogs(t *testing.T) {
	t.Parallel()
	c := validConfig()
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("config", "config", c, "cred", c.Credentials[0], "secret", c.Credentials[0].Secret)
		require.NotContains(t, buf.String(), testSecret)
		require.Contains(t, buf.String(), "cred-1")
		require.Contains(t, buf.String(), redacted)
	}
}

// TestSecretTypeError: a secret that is not a JSON string is a type error
// naming the field, never the value, for both of its readers (the gate's
// Parse and the executor API's request body).
func TestSecretTypeError(t *testing.T) {
	t.Parallel()
	var v struct {
		Secret Secret `json:"secret"`
	}
	err := json.Unmarshal([]byte(`{"secret":12345678}`), &v)
	var typ *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typ)
	require.Equal(t, "secret", typ.Field)
	require.NotContains(t, err.Error(), "12345678")
	_, err = Parse([]byte(`{"credentials":[{"secret":{"k":"12345678"}}]}`))
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, "invalid gate config: field credentials.secret: wrong JSON type")
}
