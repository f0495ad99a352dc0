package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
)

// maxReportInterval caps the time between verdict reports. Reports follow
// the config fetch interval, but no slower than this: a reap revokes the
// token before it stops the gate, so whatever is counted after the last
// report is lost, and a short cadence keeps that loss small. An empty report
// is never sent, so an idle gate costs nothing.
const maxReportInterval = 5 * time.Second

// reporter delivers one verdict report.
type reporter interface {
	// Report sends r and classifies the answer like a fetch: fetched (the
	// control plane took it), revoked (401) or failed. err never contains
	// the token.
	Report(ctx context.Context, r gatewire.Report) (outcome, error)
}

// httpReporter POSTs reports with the gate token on the fetcher's kind of
// client.
type httpReporter struct {
	url, token string
	client     *http.Client
}

func newHTTPReporter(url, token string) *httpReporter {
	return &httpReporter{url: url, token: token, client: controlPlaneClient()}
}

func (h *httpReporter) Report(ctx context.Context, r gatewire.Report) (outcome, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return failed, fmt.Errorf("verdict report: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return failed, fmt.Errorf("verdict report request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return failed, fmt.Errorf("verdict report: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return revoked, errors.New("verdict report: 401 unauthorized: the gate token is revoked")
	case resp.StatusCode/100 != 2:
		return failed, fmt.Errorf("verdict report: status %d", resp.StatusCode)
	}
	return fetched, nil
}

// reportLoop sends the tally's counts every interval, and once more when
// the gate stops. A failed report is put back into the tally (it saturates,
// so memory stays bounded however long the control plane is away); a 401
// ends reporting, since the token will never be accepted again.
type reportLoop struct {
	tally    *gatewire.Tally
	send     reporter
	interval time.Duration
	log      *slog.Logger
	revoked  bool
}

// run reports until ctx is done or the token is revoked.
func (l *reportLoop) run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for !l.revoked {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.flush(ctx)
		}
	}
}

// flush sends what was counted since the last report, if anything.
func (l *reportLoop) flush(ctx context.Context) {
	if l.revoked {
		return
	}
	r := l.tally.Take()
	if r.Empty() {
		return
	}
	o, err := l.send.Report(ctx, r)
	switch o {
	case fetched:
		l.log.Debug("verdicts reported", "verdicts", summary(r))
	case revoked:
		l.revoked = true
		l.log.Warn("verdict reports stop: the gate token is revoked", "unreported", summary(r))
	default:
		l.tally.Restore(r)
		l.log.Warn("verdict report failed; the counts wait for the next one", "err", err)
	}
}

// summary renders a report for a log line: "denied/not-allowed=2 …".
func summary(r gatewire.Report) string {
	parts := make([]string, 0, len(r.Verdicts))
	for _, v := range r.Verdicts {
		parts = append(parts, fmt.Sprintf("%s/%s=%d", v.Verdict, v.Reason, v.Count))
	}
	return strings.Join(parts, " ")
}
