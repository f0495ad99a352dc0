package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// reapTimeout bounds one reap, checkpoint included, whatever the caller's
// context: a reap half done is worse than a slow one.
const reapTimeout = 10 * time.Minute

// ReapResult is how the reap of one session ended.
type ReapResult struct {
	ID      domain.ID
	Reason  ReapReason
	Outcome ReapOutcome
	// Size is the checkpoint's size when Outcome is checkpointed.
	Size int64
	// Err is why the reap failed (OutcomeFailed), or why it went ahead
	// without a checkpoint.
	Err error
}

// reapLocked checkpoints the workdir (when checkpoint is set), removes the
// session's record (an orphan has none to remove) and reaps the sandbox —
// Provider.Reap revokes the gate token before it removes anything, the one
// owner of revoke-before-reap; the caller holds the session's lock and its
// activity claim. The store is written before the sandbox goes (see
// Delete): a store failure keeps the sandbox, and the next round tries
// again. For a failed checkpoint, see keepWorkdir.
func (s *Service) reapLocked(ctx context.Context, sid domain.ID, reason ReapReason, workdir string, checkpoint, strict bool) ReapResult {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	res := ReapResult{ID: sid, Reason: reason, Outcome: OutcomeReapedWithoutCheckpoint}
	switch {
	case checkpoint && s.checkpoints != nil:
		if err := s.keepWorkdir(ctx, &res, workdir, strict); err != nil {
			return s.failed(res, err)
		}
	case checkpoint:
		res.Err = errors.New("no checkpoint store is configured")
	case reason == ReasonOrphan:
		res.Err = errors.New("an orphan has no session record, hence no known workdir")
	}
	if reason != ReasonOrphan {
		if err := s.store.DeleteSession(ctx, sid); err != nil {
			return s.failed(res, fmt.Errorf("remove the session record (the sandbox is kept): %w", err))
		}
	}
	if err := s.provider.Reap(ctx, sid); err != nil {
		return s.failed(res, err)
	}
	s.handles.drop(sid, nil)
	s.observe(res)
	return res
}

// keepWorkdir checkpoints the workdir into res before a reap, and returns
// an error when the reap must not go ahead. A failed checkpoint stops the
// reap when strict (an explicit delete keeps the data rather than lose it)
// or when the failure may pass (ReapWithoutCheckpoint: the next
// round tries again); otherwise the reap goes ahead without one and any
// older checkpoint is deleted, so a later provision never restores a stale
// workdir. A strict reap of a session with no sandbox keeps the checkpoint
// already stored (the reaper took it): that is the workspace the caller
// asked to keep.
func (s *Service) keepWorkdir(ctx context.Context, res *ReapResult, workdir string, strict bool) error {
	size, err := s.checkpoint(ctx, res.ID, workdir)
	if err == nil {
		res.Outcome, res.Size = OutcomeCheckpointed, size
		return nil
	}
	if strict && errors.Is(err, sandbox.ErrNotFound) {
		rc, size, gerr := s.checkpoints.Get(ctx, res.ID)
		if gerr == nil {
			_ = rc.Close()
			res.Outcome, res.Size = OutcomeCheckpointed, size
			return nil
		}
		if !errors.Is(gerr, ports.ErrCheckpointNotFound) {
			return errors.Join(err, gerr)
		}
	}
	if strict {
		return err
	}
	if !ReapWithoutCheckpoint(err) {
		return fmt.Errorf("%w (the sandbox is kept; the next round tries again)", err)
	}
	res.Err = err
	if derr := s.checkpoints.Delete(ctx, res.ID); derr != nil {
		return fmt.Errorf("%w; and the previous checkpoint could not be deleted: %w", err, derr)
	}
	return nil
}

func (s *Service) failed(res ReapResult, err error) ReapResult {
	res.Outcome, res.Err = OutcomeFailed, err
	s.observe(res)
	return res
}

// observe logs one reap and hands it to the observer.
func (s *Service) observe(res ReapResult) {
	attrs := []any{"session", res.ID, "reason", string(res.Reason), "outcome", string(res.Outcome)}
	switch {
	case res.Outcome == OutcomeFailed:
		s.log.Error("reap failed", append(attrs, "error", res.Err)...)
	case res.Err != nil:
		s.log.Warn("reaped without a checkpoint", append(attrs, "why", res.Err)...)
	default:
		s.log.Info("reaped", append(attrs, "checkpoint_bytes", res.Size)...)
	}
	if s.onReap != nil {
		s.onReap(res)
	}
}

// checkpoint exports the workdir into the checkpoint store.
func (s *Service) checkpoint(ctx context.Context, sid domain.ID, workdir string) (int64, error) {
	rc, err := s.provider.Export(ctx, sid, workdir)
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", workdir, err)
	}
	defer func() { _ = rc.Close() }()
	n, err := s.checkpoints.Put(ctx, sid, rc)
	if err != nil {
		return 0, fmt.Errorf("store the checkpoint: %w", err)
	}
	return n, nil
}

// deleteWithCheckpoint is DELETE ?checkpoint=true: the reap path with
// reason explicit, keeping the session's workspace as its checkpoint — a
// fresh one of its sandbox, or, when there is no sandbox (the reaper took
// it), the one already stored; with neither, sandbox.ErrNotFound. Unlike
// the reaper's, a checkpoint that cannot be taken fails the delete and
// leaves the session running: the caller asked to keep the workdir. Calls in flight are not waited for (as in a plain
// delete); new ones are refused while it runs.
func (s *Service) deleteWithCheckpoint(ctx context.Context, sid domain.ID) error {
	if s.checkpoints == nil {
		return fmt.Errorf("delete %s with a checkpoint: no checkpoint store: %w", sid, ports.ErrNotImplemented)
	}
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	defer unlock()
	workdir := sandbox.DefaultWorkdir
	rec, err := s.store.GetSession(ctx, sid)
	switch {
	case err == nil && rec.Workdir != "":
		workdir = rec.Workdir
	case err != nil && !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrDecrypt):
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	s.activity.claim(sid, true)
	defer s.activity.release(sid)
	res := s.reapLocked(ctx, sid, ReasonExplicit, workdir, true, true)
	if res.Err != nil && res.Outcome == OutcomeFailed {
		return fmt.Errorf("delete %s with a checkpoint: %w", sid, res.Err)
	}
	return nil
}
