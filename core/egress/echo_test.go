package egress

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// TestRedactorEscapedEchoes: a bound secret echoed JSON-escaped,
// percent-encoded or base64-encoded (at any offset inside a longer value)
// comes back as the placeholder, in any chunking.
func TestRedactorEscapedEchoes(t *testing.T) {
	t.Parallel()
	const secret = "sk-live&<k>/é😀 a+b=c_0123456789"
	cfg := testConfig(domain.NetUnrestricted)
	cfg.Credentials[0].Secret = gatewire.NewSecret(secret)
	r := mustCompile(t, cfg).Credentials(target(t, "api.example.com:443")).Redactor()

	goJSON, err := json.Marshal(secret) // \u0026, \u003c, \u003e
	require.NoError(t, err)
	echoes := map[string]string{
		"go json":          string(goJSON),
		"python json":      `"sk-live&<k>/\u00e9\ud83d\ude00 a+b=c_0123456789"`,
		"php json":         `"sk-live&<k>\/\u00E9\uD83D\uDE00 a+b=c_0123456789"`,
		"query":            url.QueryEscape(secret),
		"query lower":      strings.ToLower(url.QueryEscape(secret)),
		"path":             url.PathEscape(secret),
		"base64":           base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 url":       base64.URLEncoding.EncodeToString([]byte(secret)),
		"base64 offset 1":  base64.StdEncoding.EncodeToString([]byte("x" + secret + "y")),
		"base64 offset 2":  base64.StdEncoding.EncodeToString([]byte("xy" + secret)),
		"basic auth":       "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+secret)),
		"base64url offset": base64.RawURLEncoding.EncodeToString([]byte("{\"k\":\"" + secret + "\"}")),
	}
	for name, echo := range echoes {
		for _, n := range []int{1, 7, 1 << 20} {
			out := chunked(r, "before "+echo+" after", n)
			require.Contains(t, out, ph1, "%s (chunks of %d): %q", name, n, out)
			require.NotContains(t, out, echo, name)
			require.NotContains(t, out, "0123456789", name)
		}
	}
	require.Equal(t, "nothing to see", chunked(r, "nothing to see", 3))
	require.True(t, r.ContainsFold("X-"+strings.ToUpper(secret)))
	require.False(t, r.ContainsFold("X-Other"))
	require.False(t, (*Replacer)(nil).ContainsFold(secret))
}

// TestEchoFormsShortSecret: a secret too short for a distinctive base64
// core gets no base64 form (it would redact unrelated text).
func TestEchoFormsShortSecret(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"abc"}, echoForms("abc"))
}
