package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// gateReportHandler adds a gate's verdict counts to the verdicts counter.
type gateReportHandler struct {
	tokens   ports.GateTokens
	verdicts metric.Int64Counter
	log      *slog.Logger
}

// NewGateReportHandler returns the handler of POST
// /internal/v1/gate/report (gatewire.ReportPath; every other path is 404). It
// authenticates the gate token like the config endpoint (401 for a missing,
// malformed, unknown or revoked one, before the body is read), then reads a
// gatewire.Report of at most gatewire.MaxReportBytes (413 beyond),
// validates it strictly (gatewire.ParseReport; 400 invalid_argument) and
// adds each count to verdicts (telemetry.VerdictsMetric, with the
// attributes verdict and reason). It answers 204. The session id goes to
// the debug log line only: as a metric attribute it would make one series
// per session. A nil verdicts counts nothing; a nil log discards.
func NewGateReportHandler(tokens ports.GateTokens, verdicts metric.Int64Counter, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if verdicts == nil {
		verdicts = noop.Int64Counter{}
	}
	h := &gateReportHandler{tokens: tokens, verdicts: verdicts, log: log}
	mux := http.NewServeMux()
	mux.Handle(gatewire.ReportPath, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint")
	})
	return mux
}

func (h *gateReportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "only POST is allowed")
		return
	}
	token, reason := bearerToken(r.Header)
	if reason != "" {
		h.unauthorized(w, r, reason)
		return
	}
	sid, err := h.tokens.Authenticate(r.Context(), token)
	switch {
	case errors.Is(err, gatewire.ErrUnauthorized):
		h.unauthorized(w, r, "unknown or revoked token")
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "gate report failed", "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, "the report could not be taken")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, gatewire.MaxReportBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, CodeInvalidArgument, "the report is too large")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeInvalidArgument, "the report could not be read")
		return
	}
	rep, err := gatewire.ParseReport(body)
	if err != nil {
		h.log.WarnContext(r.Context(), "gate report refused", "session_id", sid, "err", err)
		// ParseReport's messages name a field or a bound, never a value.
		writeError(w, http.StatusBadRequest, CodeInvalidArgument, err.Error())
		return
	}
	for _, v := range rep.Verdicts {
		h.verdicts.Add(r.Context(), v.Count, metric.WithAttributes(
			attribute.String("verdict", v.Verdict), attribute.String("reason", v.Reason)))
	}
	h.log.DebugContext(r.Context(), "gate report", "session_id", sid, "verdicts", rep.Verdicts)
	w.WriteHeader(http.StatusNoContent)
}

func (h *gateReportHandler) unauthorized(w http.ResponseWriter, r *http.Request, reason string) {
	h.log.WarnContext(r.Context(), "gate report refused", "reason", reason, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", bearerScheme)
	writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a valid gate token is required")
}
