package executor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// roundTimeout bounds the listing part of a round (Owned, Activity, the
// heartbeat); each reap has its own bound.
const roundTimeout = time.Minute

// Reaper reaps idle sessions (after checkpointing their workdir) and
// orphans, and deletes checkpoints past their retention, every interval,
// through its Service. Start runs it; Stop stops
// it and waits for the round in progress.
type Reaper struct {
	svc      *Service
	policy   ReapPolicy
	interval time.Duration
	// seen is when each listed session was first seen in its current state
	// (recorded or not): it starts an orphan's grace, and stands in for an
	// unknown activity. Only the loop's goroutine touches it.
	seen map[domain.ID]sighting

	stop chan struct{}
	wg   sync.WaitGroup
}

type sighting struct {
	recorded bool
	at       time.Time
}

// NewReaper returns a reaper of svc's sessions; it starts nothing.
func NewReaper(svc *Service, policy ReapPolicy, interval time.Duration) *Reaper {
	return &Reaper{svc: svc, policy: policy, interval: interval, seen: map[domain.ID]sighting{}}
}

// Start runs a round every interval until Stop.
func (r *Reaper) Start() {
	r.stop = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	r.wg.Go(func() {
		<-r.stop
		cancel()
	})
	r.wg.Go(func() {
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.Round(ctx)
			}
		}
	})
}

// Stop ends the loop: the round in progress sees its context cancelled
// (a reap in progress finishes within its own bound) and Stop waits for it,
// or for ctx.
func (r *Reaper) Stop(ctx context.Context) error {
	if r.stop == nil {
		return nil
	}
	close(r.stop)
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Round writes this process's activity (the heartbeat), lists the endpoint
// and reaps what the policy says, each session under its lock and after a
// re-check. It returns the reaps it made.
func (r *Reaper) Round(ctx context.Context) []ReapResult {
	s := r.svc
	lctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	ids, err := s.provider.Owned(lctx)
	if err != nil {
		s.log.Error("reaper: list the endpoint's sessions", "error", err)
		return nil
	}
	owned := make(map[domain.ID]bool, len(ids))
	for _, id := range ids {
		owned[id] = true
	}
	s.heartbeat(lctx, func(sid domain.ID) bool { return owned[sid] })
	s.handles.prune(func(sid domain.ID) bool { return owned[sid] })
	stored, err := s.store.Activity(lctx)
	if err != nil {
		s.log.Error("reaper: read session activity", "error", err)
		return nil
	}
	now := s.now()
	candidates := make([]ReapCandidate, 0, len(ids))
	for _, sid := range ids {
		last, recorded := stored[sid]
		candidates = append(candidates, r.candidate(sid, recorded, last, now))
	}
	for sid := range r.seen {
		if !owned[sid] {
			delete(r.seen, sid)
		}
	}
	var out []ReapResult
	for _, p := range r.policy.Plan(candidates, now) {
		if ctx.Err() != nil {
			break
		}
		if res, ok := r.reap(ctx, p.ID); ok {
			out = append(out, res)
		}
	}
	r.expireCheckpoints(ctx)
	return out
}

// expireCheckpoints deletes the checkpoints older than the policy's
// retention, each under its session's lock after a re-check (a reap may
// have just replaced it with a fresh one, a provision may be restoring it).
func (r *Reaper) expireCheckpoints(ctx context.Context) {
	s := r.svc
	if s.checkpoints == nil || r.policy.CheckpointRetention <= 0 {
		return
	}
	list, err := r.listCheckpoints(ctx)
	if err != nil {
		return
	}
	for _, sid := range r.policy.ExpiredCheckpoints(list, s.now()) {
		if ctx.Err() != nil {
			return
		}
		r.expire(ctx, sid)
	}
}

func (r *Reaper) listCheckpoints(ctx context.Context) ([]ports.StoredCheckpoint, error) {
	lctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	list, err := r.svc.checkpoints.List(lctx)
	if err != nil {
		r.svc.log.Error("reaper: list the checkpoints", "error", err)
	}
	return list, err
}

// expire deletes sid's checkpoint if it is still expired under the lock.
func (r *Reaper) expire(ctx context.Context, sid domain.ID) {
	s := r.svc
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		s.log.Error("reaper: take the session lock", "session", sid, "error", err)
		return
	}
	defer unlock()
	list, err := r.listCheckpoints(ctx)
	if err != nil {
		return
	}
	i := slices.IndexFunc(list, func(c ports.StoredCheckpoint) bool { return c.ID == sid })
	if i < 0 || len(r.policy.ExpiredCheckpoints(list[i:i+1], s.now())) == 0 {
		return
	}
	if err := s.checkpoints.Delete(ctx, sid); err != nil {
		s.log.Error("reaper: delete an expired checkpoint", "session", sid, "error", err)
		return
	}
	s.log.Info("checkpoint expired", "session", sid, "bytes", list[i].Size,
		"stored", list[i].Stored.UTC().Format(time.RFC3339), "retention", r.policy.CheckpointRetention.String())
}

// candidate combines the store's view of sid with this process's.
func (r *Reaper) candidate(sid domain.ID, recorded bool, last, now time.Time) ReapCandidate {
	seen, ok := r.seen[sid]
	if !ok || seen.recorded != recorded {
		seen = sighting{recorded: recorded, at: now}
		r.seen[sid] = seen
	}
	inFlight, local := r.svc.activity.snapshot(sid)
	if local.After(last) {
		last = local
	}
	return ReapCandidate{ID: sid, Recorded: recorded, LastActive: last, InFlight: inFlight, FirstSeen: seen.at}
}

// reap re-checks sid under its lock — its record and activity may have
// changed since the listing, another executor may have reaped or
// re-provisioned it — and reaps it if the policy still says so.
func (r *Reaper) reap(ctx context.Context, sid domain.ID) (ReapResult, bool) {
	s := r.svc
	unlock, err := s.locks.lock(ctx, s.store, sid)
	if err != nil {
		s.log.Error("reaper: take the session lock", "session", sid, "error", err)
		return ReapResult{}, false
	}
	defer unlock()
	rec, err := s.store.GetSession(ctx, sid)
	recorded := err == nil || errors.Is(err, session.ErrDecrypt)
	if err != nil && !recorded && !errors.Is(err, session.ErrNotFound) {
		s.log.Error("reaper: re-read the session", "session", sid, "error", err)
		return ReapResult{}, false
	}
	c := r.candidate(sid, recorded, rec.LastActive, s.now())
	reason, ok := r.policy.Decide(c, s.now())
	if ok && reason == ReasonIdle && s.procsRunning(ctx, sid) {
		// A background command is work: the session is active while one
		// runs, recorded so other executors' reapers see it too.
		s.touch(ctx, sid)
		return ReapResult{}, false
	}
	if !ok || !s.activity.claim(sid, false) {
		return ReapResult{}, false
	}
	defer s.activity.release(sid)
	workdir := rec.Workdir
	if workdir == "" {
		workdir = sandbox.DefaultWorkdir
	}
	delete(r.seen, sid)
	return s.reapLocked(ctx, sid, reason, workdir, reason == ReasonIdle, false), true
}

// heartbeat writes the activity the store has not heard of, and that of
// every session with a call in flight, so another executor's reaper sees a
// long exec as activity; keep says which idle entries to remember.
func (s *Service) heartbeat(ctx context.Context, keep func(domain.ID) bool) {
	for sid, at := range s.activity.heartbeat(s.now(), keep) {
		if err := s.store.Touch(ctx, sid, at); err != nil {
			s.log.Warn("reaper: record session activity", "session", sid, "error", err)
		}
	}
}
