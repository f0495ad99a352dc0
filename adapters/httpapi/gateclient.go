package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// The gate's side of the gate endpoints: its config fetch and its verdict
// reports, beside the handlers they talk to (gateconfig.go, gatereport.go).
// Bounds of one exchange of the gate with its control plane.
const (
	fetchTimeout       = 15 * time.Second
	fetchDialTimeout   = 5 * time.Second
	fetchHeaderTimeout = 10 * time.Second
)

// GateConfigClient is the gate's ports.GateConfigFetcher: GET
// gatewire.ConfigPath with the Bearer token on a transport of its own.
type GateConfigClient struct {
	url, token string
	client     *http.Client
}

// NewGateConfigClient returns a fetcher of url (Env.ConfigURL) on a client
// of its own (controlPlaneClient).
func NewGateConfigClient(url, token string) *GateConfigClient {
	return &GateConfigClient{url: url, token: token, client: controlPlaneClient()}
}

// controlPlaneClient is a client for the control plane with its own
// transport: no proxy variables (Proxy nil), bounded dial, handshake and
// header waits, no redirects (a redirect would carry the token elsewhere).
func controlPlaneClient() *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: fetchDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   fetchDialTimeout,
		ResponseHeaderTimeout: fetchHeaderTimeout,
		MaxIdleConns:          1,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       fetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Fetch implements ports.GateConfigFetcher.
func (f *GateConfigClient) Fetch(ctx context.Context) ([]byte, ports.GateOutcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, ports.GateFailed, fmt.Errorf("config request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		// A *url.Error names the URL, never a header.
		return nil, ports.GateFailed, fmt.Errorf("config fetch: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, ports.GateRevoked, errors.New("config fetch: 401 unauthorized: the gate token is revoked")
	default:
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, ports.GateFailed, fmt.Errorf("config fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, gatewire.MaxConfigBytes+1))
	switch {
	case err != nil:
		return nil, ports.GateFailed, fmt.Errorf("config fetch: reading the body: %w", err)
	case len(body) > gatewire.MaxConfigBytes:
		return nil, ports.GateFailed, fmt.Errorf("config fetch: body over %d bytes", gatewire.MaxConfigBytes)
	}
	return body, ports.GateFetched, nil
}

// GateReportClient is the gate's ports.GateReporter: it POSTs reports to
// gatewire.ReportPath with the gate token on the fetcher's kind of client.
type GateReportClient struct {
	url, token string
	client     *http.Client
}

// NewGateReportClient returns a reporter to url (Env.ReportURL).
func NewGateReportClient(url, token string) *GateReportClient {
	return &GateReportClient{url: url, token: token, client: controlPlaneClient()}
}

// Report implements ports.GateReporter.
func (h *GateReportClient) Report(ctx context.Context, r gatewire.Report) (ports.GateOutcome, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return ports.GateFailed, fmt.Errorf("verdict report: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return ports.GateFailed, fmt.Errorf("verdict report request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return ports.GateFailed, fmt.Errorf("verdict report: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return ports.GateRevoked, errors.New("verdict report: 401 unauthorized: the gate token is revoked")
	case resp.StatusCode/100 != 2:
		return ports.GateFailed, fmt.Errorf("verdict report: status %d", resp.StatusCode)
	}
	return ports.GateFetched, nil
}

var (
	_ ports.GateConfigFetcher = (*GateConfigClient)(nil)
	_ ports.GateReporter      = (*GateReportClient)(nil)
)
