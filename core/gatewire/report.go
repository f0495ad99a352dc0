package gatewire

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sandgate/sandgate/core/strictjson"
)

// The verdict report is the other half of the gate's wire contract: the gate
// POSTs the verdicts it made since its last report to
// <ControlplaneURL>/internal/v1/gate/report with its gate token, and the
// executor adds them to its sandgate.gate.verdicts counter. Only counts by
// verdict and reason travel: no host, no session-chosen string, so the
// executor's metric keeps a bounded number of series whatever a sandbox does.

// Verdicts of a report.
const (
	VerdictAllowed = "allowed"
	VerdictDenied  = "denied"
)

// Reasons of a report: the bounded set the gate's verdict rules fold into
// (egress.Verdict.Reason). The executor maps any other value to ReasonOther.
const (
	ReasonAllowedHost    = "allowed-host"     // an allowed_hosts entry admitted a public address
	ReasonOpened         = "opened"           // an allowed_hosts entry opened an internal address
	ReasonUnrestricted   = "unrestricted"     // the policy admits every public host
	ReasonNoConfig       = "no-config"        // no good config yet, or the token was revoked
	ReasonNotAllowed     = "not-allowed"      // limited, and no allowed_hosts entry matches
	ReasonInvalidHost    = "invalid-host"     // the target is not host:port
	ReasonNonCanonicalIP = "non-canonical-ip" // 2130706433, 127.1, …
	ReasonDeniedAddress  = "denied-address"   // the gate's own or the control plane's address
	ReasonFloor          = "floor"            // the dial floor refused an internal address
	ReasonTunnelMismatch = "tunnel-mismatch"  // an inner request names another host than its CONNECT
	ReasonSNIMismatch    = "sni-mismatch"     // a ClientHello names another host than its CONNECT
	ReasonBadHello       = "malformed-client-hello"
	ReasonMalformed      = "malformed-request"
	ReasonOther          = "other" // anything else
)

// reasons is the set of known reasons.
var reasons = []string{
	ReasonAllowedHost, ReasonOpened, ReasonUnrestricted, ReasonNoConfig, ReasonNotAllowed,
	ReasonInvalidHost, ReasonNonCanonicalIP, ReasonDeniedAddress, ReasonFloor, ReasonTunnelMismatch,
	ReasonSNIMismatch, ReasonBadHello, ReasonMalformed, ReasonOther,
}

// Bounds of a report.
const (
	// MaxReportBytes bounds a report's body: every (verdict, reason) pair
	// with a large count fits in about 3 KiB.
	MaxReportBytes = 16 << 10
	// MaxReportEntries bounds a report's entries: twice the known reasons,
	// with room for a newer gate's reasons.
	MaxReportEntries = 64
	// MaxVerdictCount bounds one entry's count. A Tally saturates there, so
	// a gate that cannot report for a long time still sends a valid report.
	MaxVerdictCount = 1 << 40
)

// Reason returns r when it is a known reason, ReasonOther otherwise.
func Reason(r string) string {
	if slices.Contains(reasons, r) {
		return r
	}
	return ReasonOther
}

// Report is the body of a verdict report.
type Report struct {
	Verdicts []VerdictCount `json:"verdicts"`
}

// VerdictCount is how many requests got one verdict for one reason.
type VerdictCount struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Count   int64  `json:"count"`
}

// Empty reports whether the report counts nothing.
func (r Report) Empty() bool {
	for _, v := range r.Verdicts {
		if v.Count > 0 {
			return false
		}
	}
	return true
}

// ParseReport decodes and validates a report strictly: at most
// MaxReportBytes, no unknown field or trailing data, at most
// MaxReportEntries entries, each verdict "allowed" or "denied", each count
// from 0 to MaxVerdictCount. Unknown reasons become ReasonOther, entries of
// one (verdict, reason) are summed (capped at MaxVerdictCount) and zero
// counts dropped. Errors wrap ErrInvalid and quote no value the sender wrote
// (a key, clipped, at most).
func ParseReport(data []byte) (Report, error) {
	if len(data) > MaxReportBytes {
		return Report{}, fmt.Errorf("%w: report is %d bytes, at most %d", ErrInvalid, len(data), MaxReportBytes)
	}
	var r Report
	// Strict like every JSON body the executor takes: valid UTF-8, no
	// duplicate key, exact key names.
	if err := strictjson.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("%w: report: %w", ErrInvalid, err)
	}
	if len(r.Verdicts) > MaxReportEntries {
		return Report{}, fmt.Errorf("%w: report: %d entries, at most %d", ErrInvalid, len(r.Verdicts), MaxReportEntries)
	}
	var t Tally
	for i, v := range r.Verdicts {
		if v.Verdict != VerdictAllowed && v.Verdict != VerdictDenied {
			return Report{}, fmt.Errorf("%w: verdicts[%d].verdict: want allowed or denied", ErrInvalid, i)
		}
		if v.Count < 0 || v.Count > MaxVerdictCount {
			return Report{}, fmt.Errorf("%w: verdicts[%d].count: want 0 to %d", ErrInvalid, i, int64(MaxVerdictCount))
		}
		t.add(v.Verdict, Reason(v.Reason), v.Count)
	}
	return t.Take(), nil
}

// Tally counts verdicts between reports. The zero value is ready; it is safe
// for concurrent use.
type Tally struct {
	mu sync.Mutex
	n  map[tallyKey]int64
}

type tallyKey struct{ verdict, reason string }

// Add counts one verdict; reason is folded with Reason.
func (t *Tally) Add(allowed bool, reason string) {
	v := VerdictDenied
	if allowed {
		v = VerdictAllowed
	}
	t.add(v, Reason(reason), 1)
}

func (t *Tally) add(verdict, reason string, n int64) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[tallyKey]int64{}
	}
	k := tallyKey{verdict, reason}
	t.n[k] = min(t.n[k]+n, MaxVerdictCount)
}

// Take returns the counts since the last Take and resets them, sorted by
// verdict and reason.
func (t *Tally) Take() Report {
	t.mu.Lock()
	n := t.n
	t.n = nil
	t.mu.Unlock()
	r := Report{Verdicts: make([]VerdictCount, 0, len(n))}
	for k, c := range n {
		r.Verdicts = append(r.Verdicts, VerdictCount{Verdict: k.verdict, Reason: k.reason, Count: c})
	}
	slices.SortFunc(r.Verdicts, func(a, b VerdictCount) int {
		return strings.Compare(a.Verdict+"/"+a.Reason, b.Verdict+"/"+b.Reason)
	})
	return r
}

// Restore adds a taken report back, after it could not be delivered, so the
// next report carries it.
func (t *Tally) Restore(r Report) {
	for _, v := range r.Verdicts {
		if v.Verdict == VerdictAllowed || v.Verdict == VerdictDenied {
			t.add(v.Verdict, Reason(v.Reason), min(v.Count, MaxVerdictCount))
		}
	}
}
