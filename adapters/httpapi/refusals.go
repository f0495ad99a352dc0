package httpapi

import (
	"sync/atomic"

	"golang.org/x/time/rate"
)

// Defaults of a RefusalSampler: ten lines a second, twenty at once.
const (
	DefaultRefusalRate  = 10
	DefaultRefusalBurst = 20
)

// RefusalSampler bounds the log lines refused requests cost. Refusals are
// what an unauthenticated client can send as fast as it likes, and each
// one logged is ~360 bytes: 20 MB in 12 s was measured. A token bucket per
// process lets a few lines a second through; the others are counted, and
// the next line that passes says how many were left out, so the log keeps
// both the shape of a flood and its size. Without a goroutine of its own,
// a count is reported by the next refusal, however late. Safe for
// concurrent use.
type RefusalSampler struct {
	lim        *rate.Limiter
	suppressed atomic.Int64
}

// NewRefusalSampler lets perSecond lines through a second, burst at once
// (≤ 0: the defaults).
func NewRefusalSampler(perSecond float64, burst int) *RefusalSampler {
	if perSecond <= 0 {
		perSecond = DefaultRefusalRate
	}
	if burst <= 0 {
		burst = DefaultRefusalBurst
	}
	return &RefusalSampler{lim: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// Allow reports whether this refusal may be logged and, when it may, how
// many were left out since the last one logged.
func (s *RefusalSampler) Allow() (ok bool, suppressed int64) {
	if !s.lim.Allow() {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}
