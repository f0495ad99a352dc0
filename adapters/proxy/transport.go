package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"

	"github.com/sandgate/sandgate/core/egress"
)

// newTransport is the proxy's own upstream transport (C-GW-6): no proxy from
// the environment, the floor's dialer, full TLS verification against
// Options.RootCAs, HTTP/1.1 only, no transparent decompression (the client
// gets the origin's bytes), bounded idle pool and response-header wait.
func (p *Proxy) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:       nil,
		DialContext: p.dialTransport,
		TLSClientConfig: &tls.Config{
			RootCAs:    p.opts.RootCAs,
			MinVersion: tls.VersionTLS12,
		},
		TLSHandshakeTimeout:   p.opts.DialTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		IdleConnTimeout:       p.opts.IdleTimeout,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// failure maps an upstream error to the status and fixed reason the client
// gets, and the verdict when the floor refused.
func failure(err error) (int, string, egress.Verdict, bool) {
	var de *dialError
	switch {
	case errors.As(err, &de):
		return de.status, de.reason, de.verdict, de.status == http.StatusForbidden
	case errors.Is(err, egress.ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, reasonTooLarge, egress.Verdict{}, false
	case errors.Is(err, errSubstBusy):
		return http.StatusTooManyRequests, reasonSubstBusy, egress.Verdict{}, false
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, reasonUpstreamTime, egress.Verdict{}, false
	}
	return http.StatusBadGateway, reasonUpstream, egress.Verdict{}, false
}
