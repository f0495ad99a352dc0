package main

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/felixge/httpsnoop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/core/domain"
)

// maxLogValue bounds a client-chosen string (an unvalidated id, a path) in
// the request log line.
const maxLogValue = 256

// quiet are the paths whose requests are logged at debug only: probes and
// scrapes would drown the lines that matter.
var quiet = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// accessLog runs inside the otelhttp handler and around the muxes: once the
// request is served it knows the route and the session id the mux matched
// (the muxes set them on the request itself), so it puts the session id on
// the request's span, counts the request by route and status, and writes
// the request's one log line with the session id. The line has the method,
// route, path, status, size and duration; never a query, a header or a
// body, which may carry a file name chosen by an agent or a token. Lines of
// requests refused 401 pass through refusals: a client without the token
// could otherwise write the log as fast as it can send (the metric still
// counts every one).
func accessLog(next http.Handler, requests metric.Int64Counter, log *slog.Logger, refusals *httpapi.RefusalSampler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var status atomic.Int64
		var written atomic.Int64
		ww := httpsnoop.Wrap(w, httpsnoop.Hooks{
			WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
				return func(code int) {
					status.CompareAndSwap(0, int64(code))
					next(code)
				}
			},
			Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
				return func(b []byte) (int, error) {
					status.CompareAndSwap(0, http.StatusOK)
					n, err := next(b)
					written.Add(int64(n))
					return n, err
				}
			},
		})
		// Deferred: a stream aborted mid-body panics with
		// http.ErrAbortHandler, and that request is logged too.
		aborted := true
		defer func() {
			code := int(status.Load())
			if code == 0 {
				code = http.StatusOK
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			sid := domain.ClipTo(r.PathValue("id"), maxLogValue) // unvalidated yet: the client's string
			if sid != "" {
				trace.SpanFromContext(r.Context()).SetAttributes(telemetry.SessionIDKey.String(sid))
			}
			requests.Add(r.Context(), 1, metric.WithAttributes(
				attribute.String("route", route), attribute.Int("status", code)))
			level := slog.LevelInfo
			if quiet[r.URL.Path] {
				level = slog.LevelDebug
			}
			var attrs []slog.Attr
			if code == http.StatusUnauthorized {
				ok, n := refusals.Allow()
				if !ok {
					return
				}
				attrs = append(attrs, slog.Int64("suppressed", n))
			}
			attrs = append(attrs, []slog.Attr{slog.String("method", r.Method), slog.String("route", route),
				slog.String("path", domain.ClipTo(r.URL.Path, maxLogValue)), slog.Int("status", code), slog.Int64("bytes", written.Load()),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)}...)
			if sid != "" {
				attrs = append(attrs, slog.String("session_id", sid))
			}
			if aborted {
				attrs = append(attrs, slog.Bool("aborted", true))
			}
			log.LogAttrs(r.Context(), level, "api request", attrs...)
		}()
		next.ServeHTTP(ww, r)
		aborted = false
	})
}
