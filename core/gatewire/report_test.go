package gatewire

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReasonFoldsUnknown(t *testing.T) {
	t.Parallel()
	for _, r := range reasons {
		require.Equal(t, r, Reason(r))
	}
	for _, r := range []string{"", "allowed_hosts:api.example.com", "x", strings.Repeat("a", 10000)} {
		require.Equal(t, ReasonOther, Reason(r))
	}
}

func TestTallyTakeAndRestore(t *testing.T) {
	t.Parallel()
	var tl Tally
	require.True(t, tl.Take().Empty())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				tl.Add(true, ReasonAllowedHost)
				tl.Add(false, "made-up")
			}
		})
	}
	wg.Wait()
	want := Report{Verdicts: []VerdictCount{
		{VerdictAllowed, ReasonAllowedHost, 800},
		{VerdictDenied, ReasonOther, 800},
	}}
	got := tl.Take()
	require.Equal(t, want, got)
	require.True(t, tl.Take().Empty(), "Take resets")

	tl.Add(false, ReasonNotAllowed)
	tl.Restore(got)
	require.Equal(t, Report{Verdicts: []VerdictCount{
		{VerdictAllowed, ReasonAllowedHost, 800},
		{VerdictDenied, ReasonNotAllowed, 1},
		{VerdictDenied, ReasonOther, 800},
	}}, tl.Take())
}

func TestTallySaturates(t *testing.T) {
	t.Parallel()
	var tl Tally
	tl.Restore(Report{Verdicts: []VerdictCount{{VerdictDenied, ReasonFloor, MaxVerdictCount}}})
	tl.Add(false, ReasonFloor)
	require.Equal(t, int64(MaxVerdictCount), tl.Take().Verdicts[0].Count)
}

func TestParseReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       Report
		err        string
	}{
		{"empty", `{"verdicts":[]}`, Report{Verdicts: []VerdictCount{}}, ""},
		{"ok", `{"verdicts":[{"verdict":"denied","reason":"not-allowed","count":2},{"verdict":"allowed","reason":"allowed-host","count":3}]}`,
			Report{Verdicts: []VerdictCount{{VerdictAllowed, ReasonAllowedHost, 3}, {VerdictDenied, ReasonNotAllowed, 2}}}, ""},
		{"unknown reasons fold and sum", `{"verdicts":[{"verdict":"denied","reason":"evil.example.com","count":2},{"verdict":"denied","reason":"zzz","count":5},{"verdict":"denied","reason":"floor","count":0}]}`,
			Report{Verdicts: []VerdictCount{{VerdictDenied, ReasonOther, 7}}}, ""},
		{"bad verdict", `{"verdicts":[{"verdict":"maybe","reason":"floor","count":1}]}`, Report{}, "verdicts[0].verdict"},
		{"negative", `{"verdicts":[{"verdict":"denied","reason":"floor","count":-1}]}`, Report{}, "verdicts[0].count"},
		{"too large a count", `{"verdicts":[{"verdict":"denied","reason":"floor","count":1099511627777}]}`, Report{}, "verdicts[0].count"},
		{"unknown field", `{"verdicts":[],"session":"x"}`, Report{}, "unknown field"},
		{"trailing", `{"verdicts":[]} {}`, Report{}, "trailing"},
		{"not json", `nope`, Report{}, "malformed"},
		{"duplicate key", `{"verdicts":[{"verdict":"denied","verdict":"allowed","reason":"floor","count":1}]}`, Report{}, "duplicate key"},
		{"key in another case", `{"Verdicts":[]}`, Report{}, "unknown field"},
		{"too many entries", `{"verdicts":[` + strings.Repeat(`{"verdict":"denied","reason":"floor","count":1},`, MaxReportEntries) +
			`{"verdict":"denied","reason":"floor","count":1}]}`, Report{}, "entries"},
		{"too big", `{"verdicts":[]}` + strings.Repeat(" ", MaxReportBytes), Report{}, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseReport([]byte(tt.body))
			if tt.err != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorContains(t, err, tt.err)
				require.NotContains(t, err.Error(), "evil")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
