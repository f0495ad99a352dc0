package executor

import (
	"errors"
	"slices"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// ReapReason says why a session's sandbox is reaped (the `reason` attribute
// of the sandgate.reaps counter).
type ReapReason string

const (
	// ReasonIdle: the session saw no API call for the idle TTL.
	ReasonIdle ReapReason = "idle"
	// ReasonOrphan: labelled assets with no session record, past the grace.
	ReasonOrphan ReapReason = "orphan"
	// ReasonExplicit: DELETE /v1/sessions/{id}?checkpoint=true.
	ReasonExplicit ReapReason = "explicit"
)

// ReapOutcome is how one reap ended (the `outcome` attribute).
type ReapOutcome string

const (
	// OutcomeCheckpointed: the workdir was stored, then the sandbox reaped.
	OutcomeCheckpointed ReapOutcome = "checkpointed"
	// OutcomeReapedWithoutCheckpoint: reaped with no checkpoint (an orphan,
	// no checkpoint store, a workdir too large to keep or with nothing in
	// it; the reason is logged).
	OutcomeReapedWithoutCheckpoint ReapOutcome = "reaped_without_checkpoint"
	// OutcomeFailed: the checkpoint (for any other reason than
	// ReapWithoutCheckpoint's), the revoke or the reap failed; the session
	// is left as it was and the next round tries again.
	OutcomeFailed ReapOutcome = "failed"
)

// ReapWithoutCheckpoint reports whether an idle reap may go ahead after its
// checkpoint failed with err: only when keeping the workdir is impossible
// for good — it exceeds the store's bound, it does not exist, or the
// sandbox is gone — never for a failure that may pass (a full disk, an
// engine that did not answer): then the sandbox is kept, and the next round
// tries again, since reaping it would lose the workdir.
func ReapWithoutCheckpoint(err error) bool {
	return errors.Is(err, ports.ErrCheckpointTooLarge) || errors.Is(err, sandbox.ErrFileNotExist) ||
		errors.Is(err, sandbox.ErrNotFound)
}

// ReapPolicy is the reaper's configuration. A zero IdleTTL reaps no idle
// session; a zero OrphanGrace reaps orphans at first sight; a zero
// CheckpointRetention keeps checkpoints until they are restored or their
// session is deleted (ExpiredCheckpoints).
type ReapPolicy struct {
	IdleTTL             time.Duration
	OrphanGrace         time.Duration
	CheckpointRetention time.Duration
}

// ReapCandidate is what the reaper knows of one session with labelled
// assets on the endpoint.
type ReapCandidate struct {
	ID domain.ID
	// Recorded: the store holds a record of the session. A provision writes
	// the record before it creates anything, so a sandbox being provisioned
	// (by any executor sharing the store) is never an orphan.
	Recorded bool
	// LastActive is the latest activity known, the store's and this
	// process's; zero when neither knows any (a record written before
	// activity was stored).
	LastActive time.Time
	// InFlight counts the calls (exec, transfer, …) running on the session
	// in this process now.
	InFlight int
	// FirstSeen is when this reaper first listed the session in its current
	// state (recorded or not); it stands in for an unknown LastActive and
	// starts an orphan's grace. After a restart it starts again: the reaper
	// errs on the side of keeping a sandbox.
	FirstSeen time.Time
}

// Decide reports whether c is to be reaped at now, and why.
func (p ReapPolicy) Decide(c ReapCandidate, now time.Time) (ReapReason, bool) {
	switch {
	case c.InFlight > 0:
		return "", false
	case !c.Recorded:
		return ReasonOrphan, now.Sub(c.FirstSeen) >= p.OrphanGrace
	case p.IdleTTL <= 0:
		return "", false
	}
	last := c.LastActive
	if last.IsZero() {
		last = c.FirstSeen
	}
	return ReasonIdle, now.Sub(last) >= p.IdleTTL
}

// Reap is one session the reaper is to reap.
type Reap struct {
	ID     domain.ID
	Reason ReapReason
}

// Plan returns the candidates to reap at now, sorted by id.
func (p ReapPolicy) Plan(cs []ReapCandidate, now time.Time) []Reap {
	var out []Reap
	for _, c := range cs {
		if reason, ok := p.Decide(c, now); ok {
			out = append(out, Reap{ID: c.ID, Reason: reason})
		}
	}
	slices.SortFunc(out, func(a, b Reap) int { return a.ID.Compare(b.ID) })
	return out
}

// ExpiredCheckpoints returns the ids of the checkpoints stored
// CheckpointRetention or more before now, sorted. A zero retention keeps
// every checkpoint. A checkpoint stored "in the future" (a clock that moved
// back) is kept: expiry errs on the side of keeping data.
func (p ReapPolicy) ExpiredCheckpoints(cs []ports.StoredCheckpoint, now time.Time) []domain.ID {
	if p.CheckpointRetention <= 0 {
		return nil
	}
	var out []domain.ID
	for _, c := range cs {
		if now.Sub(c.Stored) >= p.CheckpointRetention {
			out = append(out, c.ID)
		}
	}
	slices.SortFunc(out, domain.ID.Compare)
	return out
}
