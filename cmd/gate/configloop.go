package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
)

// Retry cadence until the gate is first ready (B-3: provisioning waits for
// it, so a transient error must not cost a whole fetch interval).
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// Bounds of one fetch.
const (
	fetchTimeout       = 15 * time.Second
	fetchDialTimeout   = 5 * time.Second
	fetchHeaderTimeout = 10 * time.Second
)

// outcome classifies one fetch.
type outcome int

const (
	// fetched: 200 with a body.
	fetched outcome = iota
	// revoked: 401, the token is no longer valid (C-GW-1).
	revoked
	// failed: anything else; the last good config stays.
	failed
)

// fetcher fetches the gate config once.
type fetcher interface {
	// Fetch returns the body of a 200, or the outcome and why not. err
	// never contains the token.
	Fetch(ctx context.Context) (body []byte, o outcome, err error)
}

// httpFetcher is the real fetcher: GET with the Bearer token on a transport
// of its own.
type httpFetcher struct {
	url, token string
	client     *http.Client
}

// newHTTPFetcher returns a fetcher of url on a client of its own
// (controlPlaneClient).
func newHTTPFetcher(url, token string) *httpFetcher {
	return &httpFetcher{url: url, token: token, client: controlPlaneClient()}
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

func (f *httpFetcher) Fetch(ctx context.Context) ([]byte, outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, failed, fmt.Errorf("config request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		// A *url.Error names the URL, never a header.
		return nil, failed, fmt.Errorf("config fetch: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, revoked, errors.New("config fetch: 401 unauthorized: the gate token is revoked")
	default:
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, failed, fmt.Errorf("config fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, gatewire.MaxConfigBytes+1))
	switch {
	case err != nil:
		return nil, failed, fmt.Errorf("config fetch: reading the body: %w", err)
	case len(body) > gatewire.MaxConfigBytes:
		return nil, failed, fmt.Errorf("config fetch: body over %d bytes", gatewire.MaxConfigBytes)
	}
	return body, fetched, nil
}

// loop keeps the proxy's config fresh (C-GW-1, B-3): the first fetch at
// once, quick retries until the gate is ready, then one fetch every
// interval; 401 revokes the proxy and ends the loop (the gate stays alive
// and unhealthy: exiting would re-run startup in a crash loop).
type loop struct {
	fetch    fetcher
	proxy    egressProxy
	caFile   string
	interval time.Duration
	log      *slog.Logger
	// ready, if set, is called once, after the CA file is written and the
	// "gate ready" line logged.
	ready      func()
	readyAttrs []any

	// firstRetry and maxRetry override the defaults (tests).
	firstRetry, maxRetry time.Duration

	isReady bool
	last    [sha256.Size]byte // of the body in force, to skip re-applying it
}

// run loops until ctx is done or the token is revoked.
func (l *loop) run(ctx context.Context) {
	retry := l.firstRetry
	if retry == 0 {
		retry = firstRetry
	}
	maxR := l.maxRetry
	if maxR == 0 {
		maxR = maxRetry
	}
	for {
		if l.once(ctx) == revoked {
			return
		}
		wait := l.interval
		if !l.isReady {
			wait, retry = retry, min(2*retry, maxR)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once fetches and applies the config one time.
func (l *loop) once(ctx context.Context) outcome {
	body, o, err := l.fetch.Fetch(ctx)
	switch {
	case ctx.Err() != nil:
		return failed
	case o == revoked:
		l.proxy.Revoke()
		l.log.Error("gate token revoked: denying everything and no longer fetching", "err", err)
		return revoked
	case o != fetched:
		l.log.Warn("gate config fetch failed; keeping the last good config", "err", err, "ready", l.isReady)
		return failed
	}
	sum := sha256.Sum256(body)
	if l.isReady && sum == l.last {
		return fetched
	}
	cfg, err := gatewire.Parse(body)
	if err == nil {
		err = l.proxy.SetConfig(cfg)
	}
	if err != nil {
		// Parse and Compile errors never quote a secret.
		l.log.Error("gate config refused; keeping the last good config", "err", err, "ready", l.isReady)
		return failed
	}
	l.last = sum
	if !l.isReady {
		if err := l.becomeReady(cfg); err != nil {
			l.log.Error("gate not ready", "err", err)
			return failed
		}
	} else {
		l.log.Info("gate config updated", "config", cfg)
	}
	return fetched
}

// becomeReady writes the CA certificate, then says the gate is ready:
// nothing may report ready before the sandbox can trust the CA.
func (l *loop) becomeReady(cfg gatewire.Config) error {
	pem := l.proxy.CACertPEM()
	if len(pem) == 0 {
		return errors.New("the proxy has no CA certificate after a good config")
	}
	if err := writeFileAtomic(l.caFile, pem, 0o644); err != nil {
		return fmt.Errorf("GATE_CA_FILE: %w", err)
	}
	l.isReady = true
	l.log.Info("gate ready", append(l.readyAttrs, "ca_file", l.caFile, "config", cfg)...)
	if l.ready != nil {
		l.ready()
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old file or the whole new
// one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	return nil
}
