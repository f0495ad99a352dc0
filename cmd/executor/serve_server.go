package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/telemetry"
	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// idleTimeout bounds a kept-alive connection between requests. There is no
// read or write timeout: a transfer of 500 MB may take minutes. Headers
// must arrive within SANDGATE_READ_HEADER_TIMEOUT, and a body that stalls
// for SANDGATE_BODY_IDLE_TIMEOUT fails (httpapi.BodyGuard).
const idleTimeout = 2 * time.Minute

// serverModule provides the HTTP servers and starts them: the API (with the
// gate config endpoint, probes, metrics and OpenAPI document) on
// SANDGATE_LISTEN, and the gate config endpoint alone on
// SANDGATE_GATE_LISTEN when set.
var serverModule = fx.Module("server",
	fx.Provide(newMux, newServers),
	fx.Invoke(func(*servers) {}),
)

// muxDeps are what the mux serves.
type muxDeps struct {
	fx.In
	Config   config.Config
	Log      *slog.Logger
	Service  ports.Service
	Store    ports.SessionStore
	Provider ports.Provider
	Metrics  metricsHandler
	Meters   metric.MeterProvider
	Tracer   trace.TracerProvider
}

// mux is the API's handler and the gate endpoint's, kept apart so the gate
// listener serves nothing else.
type mux struct {
	api, gate http.Handler
}

func newMux(d muxDeps) (mux, error) {
	// One guard for every handler that reads a body, on both listeners:
	// SANDGATE_MAX_BODIES is the process's.
	bodies := httpapi.NewBodyGuard(d.Config.MaxBodies, d.Config.BodyIdleTimeout)
	gate, err := gateHandler(d)
	if err != nil {
		return mux{}, err
	}
	gate = bodies.Wrap(gate)
	m := http.NewServeMux()
	// Every path no other pattern takes answers the API's JSON 404.
	m.Handle("/", httpapi.NewAPIHandler(d.Service, httpapi.APIOptions{
		Token: d.Config.APIToken, Logger: d.Log,
		Bodies: bodies, BatchBudget: httpapi.NewBudget(d.Config.BatchMemory),
		StreamStallTimeout: d.Config.BodyIdleTimeout,
		MaxStreams:         d.Config.MaxStreams, PortIdleTimeout: d.Config.PortIdleTimeout,
		// The store's start resolved the key (creating its file) before
		// the server's start builds anything that signs.
		SecretKey: secretKey(d.Config, d.Log),
	}))
	m.Handle(gatewire.ConfigPath, gate)
	m.Handle(gatewire.ReportPath, gate)
	m.HandleFunc("GET /healthz", healthz)
	m.Handle("GET /readyz", readyz(d.Store, d.Provider, d.Log))
	m.Handle("GET /metrics", d.Metrics)
	m.HandleFunc("GET /openapi.json", serveOpenAPI)
	// One sampler for the refused requests' access lines of both servers.
	refusals := httpapi.NewRefusalSampler(0, 0)
	requests, err := telemetry.APIRequests(d.Meters)
	if err != nil {
		return mux{}, err
	}
	api := accessLog(m, requests, d.Log, refusals)
	gateLogged := accessLog(gate, requests, d.Log, refusals)
	return mux{api: instrument(api, d.Tracer, d.Meters), gate: instrument(gateLogged, d.Tracer, d.Meters)}, nil
}

// gateHandler serves the gates' endpoints, config and verdict report, and
// nothing else (every other path is 404).
func gateHandler(d muxDeps) (http.Handler, error) {
	verdicts, err := telemetry.GateVerdicts(d.Meters)
	if err != nil {
		return nil, err
	}
	report := httpapi.NewGateReportHandler(d.Store, verdicts, d.Log)
	m := http.NewServeMux()
	m.Handle(gatewire.ReportPath, report)
	m.Handle("/", httpapi.NewGateConfigHandler(d.Store, d.Store, d.Log))
	return m, nil
}

// instrument adds a span and the http.server.* metrics per request; the
// span is named by the route that served it ("PUT /v1/sessions/{id}"), and
// the provider's spans are its children. Probes and scrapes are left out of
// traces, and so are the gates' verdict reports (one every few seconds per
// busy gate): they would drown the API's spans.
func instrument(h http.Handler, tp trace.TracerProvider, mp metric.MeterProvider) http.Handler {
	return otelhttp.NewHandler(h, "executor",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithMeterProvider(mp),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics", gatewire.ReportPath:
				return false
			}
			return true
		}),
	)
}

// servers are the running HTTP servers.
type servers struct {
	cfg     config.Config
	log     *slog.Logger
	api     *http.Server
	gate    *http.Server // nil without SANDGATE_GATE_LISTEN
	apiAddr net.Addr     // set by start
	// cancel ends every request's context when the graceful shutdown runs
	// out of time, so handlers stop their work rather than only lose
	// their connection.
	cancel context.CancelFunc
}

func newServers(lc fx.Lifecycle, cfg config.Config, log *slog.Logger, m mux) *servers {
	base, cancel := context.WithCancel(context.Background())
	s := &servers{cfg: cfg, log: log, api: newHTTPServer(base, m.api, cfg, log), cancel: cancel}
	if cfg.GateListen != "" {
		s.gate = newHTTPServer(base, m.gate, cfg, log)
	}
	lc.Append(fx.Hook{OnStart: s.start, OnStop: s.stop})
	return s
}

func newHTTPServer(base context.Context, h http.Handler, cfg config.Config, log *slog.Logger) *http.Server {
	return &http.Server{
		BaseContext:       func(net.Listener) context.Context { return base },
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// start binds every address first, so that a bind error fails the start
// and nothing half-listens, then serves.
func (s *servers) start(context.Context) error {
	apiLn, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("SANDGATE_LISTEN: %w", err)
	}
	var gateLn net.Listener
	if s.gate != nil {
		if gateLn, err = net.Listen("tcp", s.cfg.GateListen); err != nil {
			_ = apiLn.Close()
			return fmt.Errorf("SANDGATE_GATE_LISTEN: %w", err)
		}
		go s.serve(s.gate, gateLn, "gate")
	}
	s.apiAddr = apiLn.Addr()
	go s.serve(s.api, apiLn, "api")
	return nil
}

func (s *servers) serve(srv *http.Server, ln net.Listener, name string) {
	s.log.Info("listening", "server", name, "addr", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("server failed", "server", name, "error", err)
	}
}

// stop lets in-flight requests finish within SANDGATE_SHUTDOWN_TIMEOUT, then
// closes every connection: the requests still running see their context
// cancelled (an exec is killed, a transfer aborted; a write never leaves a
// half-written target, the provider writes through a temporary file).
func (s *servers) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	defer s.cancel()
	var errs []error
	for _, srv := range []*http.Server{s.api, s.gate} {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(ctx); err != nil {
			s.log.Warn("graceful shutdown cut short", "error", err)
			s.cancel()
			errs = append(errs, srv.Close())
		}
	}
	return errors.Join(errs...)
}
