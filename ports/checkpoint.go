package ports

import (
	"context"
	"io"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// CheckpointStore keeps one checkpoint per session: the tar of its workdir
// (Provider.Export), taken before a reap and restored by the next provision.
// Every method refuses the zero session id first (domain.ErrInvalidID,
// before any side effect); any other domain.ID is valid by construction.
type CheckpointStore interface {
	// Put stores src, read to its end, as the session's checkpoint and
	// returns its size. It replaces the previous checkpoint atomically: a
	// failed Put leaves the previous one (or none) and no partial data.
	// Errors: ErrCheckpointTooLarge once src exceeds the store's bound (src
	// is not read further); src's; the store's.
	Put(ctx context.Context, sid domain.ID, src io.Reader) (int64, error)
	// Get opens the session's checkpoint and returns it with its size; the
	// caller closes it. Errors: ErrCheckpointNotFound; the store's.
	Get(ctx context.Context, sid domain.ID) (io.ReadCloser, int64, error)
	// Delete removes the session's checkpoint; deleting none is a no-op.
	// Errors: the store's.
	Delete(ctx context.Context, sid domain.ID) error
	// List returns every stored checkpoint with its size and when it was
	// written, in no particular order (the reaper expires them by age).
	// Errors: the store's.
	List(ctx context.Context) ([]StoredCheckpoint, error)
}

// StoredCheckpoint is one checkpoint a store holds (CheckpointStore.List).
type StoredCheckpoint struct {
	ID   domain.ID
	Size int64
	// Stored is when the checkpoint was written (its reap).
	Stored time.Time
}
