package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
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

// readyz answers 200 when the store answers a ping and the provider lists
// its sandboxes, 503 naming the failing dependency otherwise. Causes go to
// the log only: they may name hosts.
func readyz(store ports.TokenStore, provider ports.Provider, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		failed := []string{}
		if p, ok := store.(pinger); !ok {
			failed = append(failed, "store")
		} else if err := p.Ping(ctx); err != nil {
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone mid-answer is not our error
}
