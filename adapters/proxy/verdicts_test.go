package proxy

import (
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/gatewire"
)

// TestVerdictsCounted: every finished exchange adds its verdict, by its
// bounded reason, to Options.Verdicts; the host never becomes a reason.
func TestVerdictsCounted(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[string]
	o := newOrigin(t, echo(&seen), false)
	res := &fakeResolver{answers: map[string][][]netip.Addr{"api.test": {addrs("127.0.0.1")}}}
	cfg := limited([]string{"api.test", "127.0.0.1"}, nil, nil)
	var tally gatewire.Tally
	h := start(t, Options{Resolve: res.resolve, Verdicts: &tally}, &cfg)
	c := h.client(nil)
	status, _ := get(t, c, "http://api.test:"+o.port()+"/ok", nil)
	require.Equal(t, http.StatusOK, status)
	status, _ = get(t, c, "http://elsewhere.test:"+o.port()+"/no", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, _ = get(t, c, "http://elsewhere.test:"+o.port()+"/no", nil)
	require.Equal(t, http.StatusForbidden, status)
	h.spans.wait(t, 3)
	require.Equal(t, gatewire.Report{Verdicts: []gatewire.VerdictCount{
		{Verdict: gatewire.VerdictAllowed, Reason: gatewire.ReasonOpened, Count: 1},
		{Verdict: gatewire.VerdictDenied, Reason: gatewire.ReasonNotAllowed, Count: 2},
	}}, tally.Take())
}

// TestProxyRulesAreReasons: the rules the proxy decides itself are known
// report reasons, not "other".
func TestProxyRulesAreReasons(t *testing.T) {
	t.Parallel()
	for _, r := range []string{ruleMismatch, ruleSNIMismatch, ruleBadHello, ruleNotProxy} {
		require.Equal(t, r, gatewire.Reason(r))
	}
}
