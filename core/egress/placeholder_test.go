package egress

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
)

func TestPlaceholder(t *testing.T) {
	t.Parallel()
	p := Placeholder(domain.MustParseSessionID("ses_abc"), "api-key")
	require.Regexp(t, `^sgph_[a-z2-7]{26}$`, p)
	// Pinned: placeholders live in sandboxes' environments across
	// re-provisions and gate versions; changing the derivation breaks them.
	require.Equal(t, p, Placeholder(domain.MustParseSessionID("ses_abc"), "api-key"))
	require.Equal(t, "sgph_k6jslb5pj4hmdv36wmpoiwdr34", p)
	require.NotEqual(t, p, Placeholder(domain.MustParseSessionID("ses_abd"), "api-key"))
	require.NotEqual(t, p, Placeholder(domain.MustParseSessionID("ses_abc"), "api-kez"))
	require.NotEqual(t, Placeholder(domain.MustParseSessionID("ab"), "c"), Placeholder(domain.MustParseSessionID("a"), "bc"))
	// The derived form passes the wire contract's validation.
	cfg := testConfig("limited")
	cfg.Credentials[0].Placeholder = p
	require.NoError(t, cfg.Validate())
}
