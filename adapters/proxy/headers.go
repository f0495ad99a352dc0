package proxy

import (
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/core/egress"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 §7.6.1 plus the
// pre-standard Proxy-Connection; every proxy-control header goes as well
// (proxyControl).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// cleanHeader returns a copy of h without hop-by-hop headers, the headers
// its Connection header names, and any proxy-control header (proxyControl),
// both ways (C-GW-3, C-GW-6). A WebSocket upgrade is the one hop-by-hop exchange relayed: its
// Connection and Upgrade headers are put back so the next hop switches too;
// any other upgrade is dropped. "TE: trailers" survives, as net/http's
// reverse proxy keeps it for gRPC.
func cleanHeader(h http.Header) (out http.Header, websocket bool) {
	websocket = isWebSocket(h)
	trailers := tokenIn(h, "Te", "trailers")
	out = h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		out.Del(name)
	}
	for name := range out {
		if proxyControl(name) {
			delete(out, name)
		}
	}
	if websocket {
		out.Set("Connection", "Upgrade")
		out.Set("Upgrade", "websocket")
	}
	if trailers {
		out.Set("Te", "trailers")
	}
	return out, websocket
}

// proxyControl reports whether a header name has "proxy" as one of its
// dash-separated words: Proxy-Authorization, Proxy-Foo, X-Proxy-Id,
// X-Upstream-Https-Proxy, X-Forwarded-Proxy, … Such headers steer the
// proxies on a path (some honour X-Upstream-*-Proxy as the next hop), and
// none is the sandbox's to send to an origin, nor an origin's to send back.
// A name is the unit, not a substring: X-Proxyless stays.
func proxyControl(name string) bool {
	for word := range strings.SplitSeq(name, "-") {
		if strings.EqualFold(word, "proxy") {
			return true
		}
	}
	return false
}

func isWebSocket(h http.Header) bool {
	return tokenIn(h, "Connection", "upgrade") && tokenIn(h, "Upgrade", "websocket")
}

// tokenIn reports whether a comma-separated header holds token
// (case-insensitive).
func tokenIn(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// dropSecretNames removes from a response every header whose name holds a
// bound secret in any letter case (names are re-cased, so a name cannot be
// redacted in place). replaceHeader does the values.
func dropSecretNames(h http.Header, r *egress.Replacer) {
	for name := range h {
		if r.ContainsFold(name) {
			delete(h, name)
		}
	}
}

// replaceHeader applies r to every header value in place (substitution into
// a request, redaction of a response) and returns the ids used. Names are
// left alone here (dropSecretNames).
func replaceHeader(h http.Header, r *egress.Replacer) []string {
	if r.Empty() {
		return nil
	}
	var used []string
	for _, vs := range h {
		for i, v := range vs {
			nv, ids := r.ReplaceString(v)
			vs[i] = nv
			used = append(used, ids...)
		}
	}
	return used
}
