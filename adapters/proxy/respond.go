package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Fixed reasons: the only text the proxy writes to a client about a refusal
// or a failure (C-GW-6). None quotes an error, a header or a host.
const (
	reasonDenied        = "egress denied by policy"
	reasonMismatch      = "request does not match the tunnel's authority"
	reasonBadRequest    = "malformed proxy request"
	reasonDNS           = "upstream name did not resolve"
	reasonDialTimeout   = "upstream connect timed out"
	reasonUpstream      = "upstream unavailable"
	reasonUpstreamTime  = "upstream timed out"
	reasonTunnelLimit   = "too many concurrent tunnels"
	reasonTooLarge      = "request body too large for credential substitution"
	reasonIntercept     = "cannot intercept this host"
	reasonNotFound      = "not found"
	reasonMethod        = "method not allowed"
	reasonNotReady      = "not ready"
	reasonUnsupportedUp = "unsupported upgrade"
	reasonEncoded       = "upstream response encoding prevents redaction"
	reasonSubstBusy     = "too many concurrent credential substitutions"
	reasonUpgradeBound  = "websocket refused: credentials are bound to this host"
)

// fixedBody is the body of every status the proxy makes up itself.
func fixedBody(reason string) string { return "sandgate: " + reason + "\n" }

// writeStatus answers on w with a fixed status and reason.
func writeStatus(w http.ResponseWriter, status int, reason string) {
	body := fixedBody(reason)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// fixedResponse is writeStatus as an *http.Response, for goproxy's handlers.
func fixedResponse(req *http.Request, status int, reason string) *http.Response {
	body := fixedBody(reason)
	return &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":           {"text/plain; charset=utf-8"},
			"Content-Length":         {strconv.Itoa(len(body))},
			"X-Content-Type-Options": {"nosniff"},
		},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
