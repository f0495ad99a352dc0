// Package executor is the executor's application service: ports.Service over a
// ports.Provider and a ports.SessionStore. It sits between the driving adapter
// (the HTTP API) and the driven ones, and imports only core and ports, so
// any provider and any store fit. Its pure decisions live beside it, with
// their table tests, rather than in core, since only this service takes
// them: the reaper's (reappolicy.go) and a checkpoint's restore
// (reroot.go).
package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// restoreTimeout bounds putting a session's previous record back after a
// failed provision, which runs even when the caller's context is done.
const restoreTimeout = 10 * time.Second

// touchTimeout bounds one write of a session's activity.
const touchTimeout = 5 * time.Second

// DefaultTouchDebounce is how often, at most, a session's activity is
// written to the store by the calls themselves.
const DefaultTouchDebounce = 5 * time.Second

// Service implements ports.Service.
type Service struct {
	provider    ports.Provider
	store       ports.SessionStore
	defaults    session.Defaults
	checkpoints ports.CheckpointStore
	log         *slog.Logger
	onReap      func(ReapResult)
	now         func() time.Time
	locks       locks
	handles     handles
	activity    activity
}

var _ ports.Service = (*Service)(nil)

// Option configures a Service.
type Option func(*Service)

// WithCheckpoints makes reaps checkpoint the workdir into cs and provisions
// restore it; without it, DELETE ?checkpoint=true is not implemented and
// the reaper reaps without checkpoints.
func WithCheckpoints(cs ports.CheckpointStore) Option {
	return func(s *Service) { s.checkpoints = cs }
}

// WithLogger sets where reaps, restores and failed activity writes are
// logged (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithReapObserver has f called once per reap with its outcome (metrics).
func WithReapObserver(f func(ReapResult)) Option { return func(s *Service) { s.onReap = f } }

// WithTouchDebounce sets how often, at most, a session's activity is
// written by its calls (default DefaultTouchDebounce).
func WithTouchDebounce(d time.Duration) Option { return func(s *Service) { s.activity.debounce = d } }

// withClock replaces time.Now (tests).
func withClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New returns a Service that provisions with provider and keeps session
// records in store. Gate tokens are not the Service's: the provider mints
// and revokes them through the ports.GateTokenIssuer it was built with
// (the same store, in cmd/executor), and its Reap revokes before anything
// is removed, so the Service never revokes itself.
func New(provider ports.Provider, store ports.SessionStore, d session.Defaults, opts ...Option) *Service {
	s := &Service{provider: provider, store: store, defaults: d, now: time.Now,
		log: slog.New(slog.DiscardHandler), activity: activity{debounce: DefaultTouchDebounce}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Provision builds the session's Spec (session.BuildSpec), stores its record
// — before the provider runs, because the gate fetches it as it starts — and
// provisions. Provisions and deletes of one session are serialised
// (locks.go: across executors when the store can). A failed provision puts
// the previous record back (or removes the new one), so a refused
// re-provision (ErrSpecMismatch) changes nothing.
func (s *Service) Provision(ctx context.Context, sid domain.ID, req session.Request) (ports.SessionInfo, error) {
	spec, rec, err := session.BuildSpec(sid, req, s.defaults)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		return ports.SessionInfo{}, fmt.Errorf("provision %s: %w", sid, err)
	}
	defer unlock()
	prev, hadPrev, err := s.previous(ctx, sid)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	use, err := s.checkpointToRestore(ctx, sid, spec.Workdir)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	rec.LastActive = s.now()
	if err := s.store.PutSession(ctx, rec); err != nil {
		return ports.SessionInfo{}, fmt.Errorf("provision %s: store the session: %w", sid, err)
	}
	sb, err := s.provider.Provision(ctx, spec)
	if err != nil {
		return ports.SessionInfo{}, errors.Join(err, s.restore(ctx, sid, prev, hadPrev))
	}
	switch use {
	case useRestore:
		if err := s.restoreCheckpoint(ctx, sid, sb, spec.Workdir); err != nil {
			return ports.SessionInfo{}, errors.Join(err, s.undoRestore(ctx, sid, prev, hadPrev))
		}
	case useStale:
		s.log.Warn("a checkpoint of a session whose sandbox exists is stale; deleting it", "session", sid)
		if err := s.checkpoints.Delete(ctx, sid); err != nil {
			s.log.Error("delete a stale checkpoint", "session", sid, "error", err)
		}
	}
	s.handles.put(sid, sb)
	// A provision is activity until it returns: one slower than the idle
	// TTL (a pull, a loaded engine) must not hand back a session that is
	// already reapable.
	s.touch(ctx, sid)
	s.activity.stored(sid, s.now())
	return ports.SessionInfo{
		ID: sid, SandboxID: sb.ID(), Image: spec.Image, Workdir: spec.Workdir, Isolation: spec.Isolation,
		Networking: networking(rec), Gated: spec.Gate != nil, State: ports.StateRunning,
	}, nil
}

// previous returns the session's stored record, if any. One that no longer
// decrypts (the key changed) is as good as none: it could not be served to a
// gate either.
func (s *Service) previous(ctx context.Context, sid domain.ID) (session.Session, bool, error) {
	rec, err := s.store.GetSession(ctx, sid)
	switch {
	case err == nil:
		return rec, true, nil
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrDecrypt):
		return session.Session{}, false, nil
	}
	return session.Session{}, false, fmt.Errorf("provision %s: read the session: %w", sid, err)
}

// undoRestore undoes a provision whose checkpoint could not be restored:
// the sandbox it created is reaped and the record put back. That sandbox
// held nothing of value: a restore happens only when no sandbox existed
// before the provision (checkpointToRestore), under the session's lock. Left running, the half-restored
// sandbox would make the kept checkpoint look stale to the retried
// provision (checkpointToRestore), which would delete it.
func (s *Service) undoRestore(ctx context.Context, sid domain.ID, prev session.Session, hadPrev bool) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	var err error
	if rerr := s.provider.Reap(rctx, sid); rerr != nil {
		err = fmt.Errorf("provision %s: reap the half-restored sandbox: %w", sid, rerr)
	}
	s.handles.drop(sid, nil)
	return errors.Join(err, s.restore(ctx, sid, prev, hadPrev))
}

// restore undoes Provision's PutSession after the provider failed.
func (s *Service) restore(ctx context.Context, sid domain.ID, prev session.Session, hadPrev bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	var err error
	if hadPrev {
		err = s.store.PutSession(ctx, prev)
	} else {
		err = s.store.DeleteSession(ctx, sid)
	}
	if err != nil {
		return fmt.Errorf("provision %s: restore the previous session record: %w", sid, err)
	}
	return nil
}

// Get reports a running session (Provider.Attach); like every call on a
// session, it counts as activity.
func (s *Service) Get(ctx context.Context, sid domain.ID) (ports.SessionInfo, error) {
	end, err := s.begin(ctx, sid)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	defer end()
	return s.info(ctx, sid)
}

// info is Get without the id check: Attach (which refreshes the cached
// handle), then what the store knows, so every executor sharing the store
// reports the same image and workdir.
func (s *Service) info(ctx context.Context, sid domain.ID) (ports.SessionInfo, error) {
	sb, err := s.provider.Attach(ctx, sid)
	if err != nil {
		return ports.SessionInfo{}, err
	}
	s.handles.put(sid, sb)
	info := ports.SessionInfo{ID: sid, SandboxID: sb.ID(), State: ports.StateRunning}
	rec, err := s.store.GetSession(ctx, sid)
	switch {
	case err == nil:
		info.Image, info.Workdir, info.Isolation = rec.Image, rec.Workdir, rec.Isolation
		info.Networking = networking(rec)
		info.Gated = s.defaults.GateImage != "" && (rec.Networking.Limited() || len(rec.Credentials) > 0)
	case !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrDecrypt):
		return ports.SessionInfo{}, fmt.Errorf("session %s: %w", sid, err)
	}
	return info, nil
}

// Delete deletes the session's checkpoint and its record (with its gate
// token), then reaps the sandbox (Provider.Reap revokes the token first:
// the one owner of revoke-before-reap). The store is written before
// anything is removed, so a store that fails (read-only, unreachable)
// fails the delete with the sandbox and its record as they were; a reap
// that fails after the record is gone leaves an orphan, which the next
// delete or the reaper's orphan pass removes. The checkpoint goes before
// the record: a deleted session is never restored by a later PUT of its
// id. With checkpoint, the workspace is kept instead (see
// deleteWithCheckpoint).
func (s *Service) Delete(ctx context.Context, sid domain.ID, checkpoint bool) error {
	if checkpoint {
		return s.deleteWithCheckpoint(ctx, sid)
	}
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	defer unlock()
	s.activity.claim(sid, true)
	defer s.activity.release(sid)
	if s.checkpoints != nil {
		if err := s.checkpoints.Delete(ctx, sid); err != nil {
			return fmt.Errorf("delete %s: delete the checkpoint: %w", sid, err)
		}
	}
	return s.removeRecordThenReap(ctx, sid)
}

// removeRecordThenReap deletes the session's record, then its sandbox; the
// caller holds the session's lock.
func (s *Service) removeRecordThenReap(ctx context.Context, sid domain.ID) error {
	if err := s.store.DeleteSession(ctx, sid); err != nil {
		return fmt.Errorf("delete %s: remove the session record (the sandbox is kept): %w", sid, err)
	}
	if err := s.provider.Reap(ctx, sid); err != nil {
		return fmt.Errorf("delete %s: %w", sid, err)
	}
	s.handles.drop(sid, nil)
	return nil
}

// List reports every session with labelled assets on the endpoint
// (Provider.Owned), each running or stopped.
func (s *Service) List(ctx context.Context) ([]ports.SessionInfo, error) {
	ids, err := s.provider.Owned(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ids, domain.ID.Compare)
	out := make([]ports.SessionInfo, 0, len(ids))
	for _, sid := range ids {
		info, err := s.info(ctx, sid)
		if errors.Is(err, sandbox.ErrNotFound) {
			info, err = ports.SessionInfo{ID: sid, State: ports.StateStopped}, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func networking(rec session.Session) *domain.Networking {
	n := rec.Networking.Normalize()
	n.AllowedHosts = slices.Clone(n.AllowedHosts)
	return &n
}
