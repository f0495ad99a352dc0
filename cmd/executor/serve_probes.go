package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sandgate/sandgate/ports"
)

// readyTimeout bounds one readiness check: a probe that hangs is a failure.
const readyTimeout = 3 * time.Second

// healthz answers 200 while the process serves HTTP at all.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// pinger is the store's optional readiness check.
type pinger interface {
	Ping(ctx context.Context) error
}

// writeProber is the store's optional write check (sessionstore.ProbeWrite).
type writeProber interface {
	ProbeWrite(ctx context.Context) error
}

// writeProbeEvery is how often, at most, /readyz writes to the store: the
// verdict is cached that long, so probes at any rate cost one small write
// per interval, and a store that stops taking writes turns the executor
// unready within it.
const writeProbeEvery = 5 * time.Second

// cachedProbe runs probe at most once per every and answers the last
// verdict in between. A probe cut short by its caller's context is not a
// verdict and is not cached.
type cachedProbe struct {
	probe func(context.Context) error
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	at    time.Time
	err   error
}

func (c *cachedProbe) check(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.every {
		return c.err
	}
	err := c.probe(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return err
	}
	c.at, c.err = c.now(), err
	return err
}

// readyz answers 200 when the store answers a ping and takes a write
// (probed at most every writeProbeEvery) and the provider lists its
// sandboxes, 503 naming the failing dependency otherwise. Causes go to the
// log only: they may name hosts.
func readyz(store ports.SessionStore, provider ports.Provider, log *slog.Logger) http.Handler {
	var writes *cachedProbe
	if w, ok := store.(writeProber); ok {
		writes = &cachedProbe{probe: w.ProbeWrite, every: writeProbeEvery, now: time.Now}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		failed := []string{}
		if err := storeReady(ctx, store, writes); err != nil {
			log.Warn("not ready", "dependency", "store", "error", err)
			failed = append(failed, "store")
		}
		if _, err := provider.Owned(ctx); err != nil {
			log.Warn("not ready", "dependency", "provider", "error", err)
			failed = append(failed, "provider")
		}
		if len(failed) > 0 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unready", "failed": failed})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	})
}

// storeReady pings the store, then checks it takes writes.
func storeReady(ctx context.Context, store ports.SessionStore, writes *cachedProbe) error {
	p, ok := store.(pinger)
	if !ok {
		return errors.New("the store has no readiness check")
	}
	if err := p.Ping(ctx); err != nil {
		return err
	}
	if writes == nil {
		return nil
	}
	return writes.check(ctx)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone mid-answer is not our error
}
