package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Metric names of the provider decorator. The Prometheus exporter renders
// them as sandgate_provisions_total, sandgate_exec_duration_seconds and
// sandgate_sandboxes_live.
const (
	ProvisionsMetric   = "sandgate.provisions"
	ExecDurationMetric = "sandgate.exec.duration"
	LiveMetric         = "sandgate.sandboxes.live"
)

// SessionIDKey is the span attribute naming the session.
const SessionIDKey = attribute.Key("sandgate.session_id")

// ExecBuckets are the exec duration histogram's bounds in seconds: 1 ms to
// 10 min, about three per decade.
var ExecBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// DefaultLiveTTL is how long the live-sandbox count is reused: a scrape
// calls Owned on the engine at most once per this period.
const DefaultLiveTTL = 10 * time.Second

// liveTimeout bounds the Owned call of one scrape.
const liveTimeout = 5 * time.Second

const scope = "github.com/sandgate/sandgate/adapters/telemetry"

// ProviderOptions configures NewProvider. Nil providers are the no-op ones;
// a nil Logger discards; a zero LiveTTL is DefaultLiveTTL.
type ProviderOptions struct {
	Tracer  trace.TracerProvider
	Meter   metric.MeterProvider
	Logger  *slog.Logger
	LiveTTL time.Duration
}

// Provider is a ports.Provider that records a span per operation of the
// provider it wraps and of the sandboxes it hands out (Provision, Attach,
// Owned, Reap, Export; Exec, ReadFile(Stream), WriteFile(Stream),
// WriteFiles, Destroy), children of the caller's span, with the session id
// and, for errors, the error recorded. Spans carry ids, sizes, counts and
// exit codes only: never a command, a path, an env value or file content,
// any of which may hold a secret. Errors that are not the caller's (no
// sentinel of core/sandbox classifies them) are logged with
// the session id.
//
// Metrics: provisions by outcome ("ok" or "error": Provision does not tell
// a created sandbox from an adopted one), the exec duration by outcome
// ("ok", "timed_out", "error"), and the live sessions: the number of
// sessions with labelled assets on the endpoint (Owned), refreshed by any
// Owned call through this Provider and at most once per LiveTTL by a scrape.
type Provider struct {
	next       ports.Provider
	tracer     trace.Tracer
	log        *slog.Logger
	provisions metric.Int64Counter
	execTime   metric.Float64Histogram

	liveTTL time.Duration
	liveMu  sync.Mutex // held across a scrape's Owned, so scrapes share one call
	live    int64
	liveAt  time.Time // zero: never counted
}

var (
	_ ports.Provider = (*Provider)(nil)
	_ ports.Sandbox  = (*Sandbox)(nil)
)

// NewProvider wraps next. It fails only when an instrument cannot be
// created (a meter provider's error).
func NewProvider(next ports.Provider, o ProviderOptions) (*Provider, error) {
	if o.Tracer == nil {
		o.Tracer = noop.NewTracerProvider()
	}
	if o.Meter == nil {
		o.Meter = metricnoop.NewMeterProvider()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LiveTTL <= 0 {
		o.LiveTTL = DefaultLiveTTL
	}
	p := &Provider{next: next, tracer: o.Tracer.Tracer(scope), log: o.Logger, liveTTL: o.LiveTTL}
	m := o.Meter.Meter(scope)
	var err error
	p.provisions, err = m.Int64Counter(ProvisionsMetric,
		metric.WithDescription("Sandbox provisions (created or adopted) by outcome."), metric.WithUnit("{provision}"))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", ProvisionsMetric, err)
	}
	p.execTime, err = m.Float64Histogram(ExecDurationMetric,
		metric.WithDescription("Duration of the commands run in sandboxes, by outcome."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(ExecBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", ExecDurationMetric, err)
	}
	_, err = m.Int64ObservableGauge(LiveMetric,
		metric.WithDescription("Sessions with sandbox or gate assets on the endpoint (refreshed at most every 10 s)."),
		metric.WithUnit("{session}"), metric.WithInt64Callback(p.observeLive))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", LiveMetric, err)
	}
	return p, nil
}

// start begins an operation's span under ctx's span.
func (p *Provider) start(ctx context.Context, name string, sid domain.ID, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !sid.IsZero() {
		attrs = append(attrs, SessionIDKey.String(sid.String()))
	}
	return p.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// end records err on span (and logs it when it is not the caller's), then
// ends it.
func (p *Provider) end(ctx context.Context, span trace.Span, op string, sid domain.ID, err error) {
	if err != nil {
		span.RecordError(errClass(err))
		span.SetStatus(codes.Error, op+" failed")
		level := slog.LevelWarn
		if callersError(err) {
			level = slog.LevelDebug
		}
		p.log.Log(ctx, level, "provider operation failed", "op", op, "session_id", sid.String(), "err", err)
	}
	span.End()
}

// errClass is what a span records of err: the contract sentinel it wraps,
// or a fixed text. Error texts name paths (`read "/workspace/…"`) and
// backend detail, and spans carry ids, sizes and exit codes only
// (docs/SECURITY.md); the log line keeps the whole error.
func errClass(err error) error {
	for _, e := range expected {
		if errors.Is(err, e) {
			return e
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return errBackend
}

var errBackend = errors.New("backend error (the executor's log has the details)")

// expected are the errors that answer a caller's request (a 4xx of the
// API), not a failure of the backend.
var expected = []error{
	sandbox.ErrNotFound, sandbox.ErrSpecMismatch, sandbox.ErrFileNotExist, sandbox.ErrIsDirectory,
	sandbox.ErrNotDirectory, sandbox.ErrNotRegularFile, sandbox.ErrNotReplaceable, sandbox.ErrNotWritable,
	sandbox.ErrFileTooLarge, sandbox.ErrSizeNotALength, sandbox.ErrInvalidExec, sandbox.ErrSizeMismatch,
	context.Canceled,
}

func callersError(err error) bool {
	for _, e := range expected {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Provision implements ports.Provider.
func (p *Provider) Provision(ctx context.Context, spec sandbox.Spec) (ports.Sandbox, error) {
	ctx, span := p.start(ctx, "Provider.Provision", spec.SessionID,
		attribute.Bool("sandgate.gated", spec.Gate != nil))
	sb, err := p.next.Provision(ctx, spec)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	} else {
		span.SetAttributes(attribute.String("sandgate.sandbox_id", sb.ID()))
	}
	p.provisions.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	p.end(ctx, span, "Provision", spec.SessionID, err)
	return p.wrap(sb, spec.SessionID), err
}

// Attach implements ports.Provider.
func (p *Provider) Attach(ctx context.Context, sid domain.ID) (ports.Sandbox, error) {
	ctx, span := p.start(ctx, "Provider.Attach", sid)
	sb, err := p.next.Attach(ctx, sid)
	p.end(ctx, span, "Attach", sid, err)
	return p.wrap(sb, sid), err
}

// Owned implements ports.Provider; a success refreshes the live count. It
// is traced only under a caller's span: readiness probes call it every few
// seconds without one, and a root span each time would drown the traces.
func (p *Provider) Owned(ctx context.Context) ([]domain.ID, error) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ids, err := p.next.Owned(ctx)
		if err == nil {
			p.setLive(len(ids))
		}
		return ids, err
	}
	ctx, span := p.start(ctx, "Provider.Owned", domain.ID{})
	ids, err := p.next.Owned(ctx)
	if err == nil {
		span.SetAttributes(attribute.Int("sandgate.sessions", len(ids)))
		p.setLive(len(ids))
	}
	p.end(ctx, span, "Owned", domain.ID{}, err)
	return ids, err
}

// Reap implements ports.Provider.
func (p *Provider) Reap(ctx context.Context, sid domain.ID) error {
	ctx, span := p.start(ctx, "Provider.Reap", sid)
	err := p.next.Reap(ctx, sid)
	p.end(ctx, span, "Reap", sid, err)
	return err
}

// Export implements ports.Provider. The span covers opening the stream,
// not reading it.
func (p *Provider) Export(ctx context.Context, sid domain.ID, root string) (io.ReadCloser, error) {
	ctx, span := p.start(ctx, "Provider.Export", sid)
	rc, err := p.next.Export(ctx, sid, root)
	p.end(ctx, span, "Export", sid, err)
	return rc, err
}

func (p *Provider) setLive(n int) {
	p.liveMu.Lock()
	p.live, p.liveAt = int64(n), time.Now()
	p.liveMu.Unlock()
}

// observeLive reports the live count, refreshing it through the wrapped
// provider (no span: a scrape is not an operation anyone traces) when it
// is older than LiveTTL. A failed refresh reports nothing rather than a
// stale or invented number.
func (p *Provider) observeLive(ctx context.Context, o metric.Int64Observer) error {
	p.liveMu.Lock()
	defer p.liveMu.Unlock()
	if time.Since(p.liveAt) >= p.liveTTL {
		ctx, cancel := context.WithTimeout(ctx, liveTimeout)
		defer cancel()
		ids, err := p.next.Owned(ctx)
		if err != nil {
			p.log.Warn("counting live sandboxes failed", "err", err)
			return nil
		}
		p.live, p.liveAt = int64(len(ids)), time.Now()
	}
	o.Observe(p.live)
	return nil
}

// wrap decorates a sandbox handle; nil stays nil (an error's handle).
func (p *Provider) wrap(sb ports.Sandbox, sid domain.ID) ports.Sandbox {
	if sb == nil {
		return nil
	}
	return &Sandbox{next: sb, p: p, sid: sid}
}
