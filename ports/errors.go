package ports

import "errors"

// Sentinels of the executor's service and its checkpoint store that no
// inner package produces, matched with errors.Is. The request's own
// (session.ErrInvalidRequest, session.ErrGateUnavailable) live with the
// validation that returns them, and the sandbox's in core/sandbox.
var (
	// ErrNotImplemented: the request asks for something this executor does
	// not do yet (a checkpointing delete without a checkpoint store).
	ErrNotImplemented = errors.New("not implemented yet")
	// ErrCheckpointNotFound: no checkpoint is stored for the session.
	ErrCheckpointNotFound = errors.New("checkpoint not found")
	// ErrCheckpointTooLarge: the workdir's tar exceeds the store's bound;
	// nothing was stored.
	ErrCheckpointTooLarge = errors.New("checkpoint too large")
	// ErrBadCheckpoint: a checkpoint's tar holds a member that cannot be
	// restored (an absolute or escaping name, a hard link, a device).
	ErrBadCheckpoint = errors.New("malformed checkpoint")
)
