package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// preview serves …/ports/{port}/{path…}: a reverse proxy to the port, the
// prefix stripped, WebSocket upgrades passed through. It takes the API
// token, or a signed URL's signature (the query's, then the cookie the
// first answer set).
func (p *portAPI) preview(w http.ResponseWriter, r *http.Request) {
	sid, port, err := target(r, "port", "")
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if !p.previewAllowed(w, r, sid, port) {
		p.refuse(w, r)
		return
	}
	prefix := previewPrefix(sid, port)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			pr.Out.Host = ""
			pr.Out.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
			pr.Out.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
			q := pr.Out.URL.Query()
			if q.Has(sigParam) {
				q.Del(sigParam)
				pr.Out.URL.RawQuery = q.Encode()
			}
			// The executor's credentials stay out of the sandbox.
			pr.Out.Header.Del("Authorization")
			dropCookie(pr.Out.Header, sigParam)
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			// One sandbox connection per request, closed after it: each
			// holds one of the session's slots while it lives.
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return p.dial(ctx, sid, port)
			},
			ResponseHeaderTimeout: p.idle,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, r, err) },
	}
	rp.ServeHTTP(w, r)
}

// previewAllowed reports whether r carries the API token or a valid
// signature of (sid, port); a valid one in the query is set as a cookie
// scoped to the preview's path.
func (p *portAPI) previewAllowed(w http.ResponseWriter, r *http.Request, sid domain.ID, port int) bool {
	if p.opts.Token == "" || p.authorized(r.Header) {
		return true
	}
	signer := p.signer()
	if signer == nil {
		return false
	}
	now := p.now()
	if sig := r.URL.Query().Get(sigParam); sig != "" && signer.valid(sig, sid, port, now) {
		exp, _ := strconv.ParseInt(sig[:strings.IndexByte(sig, '.')], 10, 64)
		http.SetCookie(w, &http.Cookie{
			Name: sigParam, Value: sig, Path: previewPrefix(sid, port) + "/",
			MaxAge: int(time.Until(time.Unix(exp, 0)).Seconds()) + 1, HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
		})
		return true
	}
	for _, c := range r.CookiesNamed(sigParam) {
		if signer.valid(c.Value, sid, port, now) {
			return true
		}
	}
	return false
}

// refuse answers 401 in the API's shape, the refusal sampled into the log
// as the token's are.
func (p *portAPI) refuse(w http.ResponseWriter, r *http.Request) {
	p.authed(nil).ServeHTTP(w, r)
}

// dropCookie removes the cookies named name from h's Cookie headers.
func dropCookie(h http.Header, name string) {
	var kept []string
	for _, line := range h.Values("Cookie") {
		var parts []string
		for _, c := range strings.Split(line, ";") {
			if n, _, _ := strings.Cut(strings.TrimSpace(c), "="); n != name {
				parts = append(parts, strings.TrimSpace(c))
			}
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	h.Del("Cookie")
	for _, line := range kept {
		h.Add("Cookie", line)
	}
}
