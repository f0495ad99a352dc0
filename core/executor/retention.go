package executor

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// StoredCheckpoint is one checkpoint a store holds (CheckpointStore.List).
type StoredCheckpoint struct {
	ID   domain.ID
	Size int64
	// Stored is when the checkpoint was written (its reap).
	Stored time.Time
}

// ExpiredCheckpoints returns the ids of the checkpoints stored
// CheckpointRetention or more before now, sorted. A zero retention keeps
// every checkpoint. A checkpoint stored "in the future" (a clock that moved
// back) is kept: expiry errs on the side of keeping data.
func (p ReapPolicy) ExpiredCheckpoints(cs []StoredCheckpoint, now time.Time) []domain.ID {
	if p.CheckpointRetention <= 0 {
		return nil
	}
	var out []domain.ID
	for _, c := range cs {
		if now.Sub(c.Stored) >= p.CheckpointRetention {
			out = append(out, c.ID)
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
