// Package proxy is the egress gate's loopback proxy (CONTRACT §10 C-GW-1..6,
// §11 B-1 and B-5), built on elazarl/goproxy for the HTTP framing: the plain
// HTTP proxy path, CONNECT handling, TLS termination of intercepted tunnels
// and WebSocket relaying. Every decision and every byte that leaves the gate
// goes through code of this package, because goproxy on its own dials
// whatever host an inner request names, follows *_PROXY variables, skips
// certificate checks in its default transport and writes Go error text to
// clients:
//
//   - the policy (core/egress) decides on the CONNECT authority or the
//     absolute URI, never the Host header;
//   - the proxy owns its http.Transport and its dialer: one resolution, every
//     candidate address checked by the dial floor, exactly the checked
//     address dialled, never a proxy from the environment;
//   - every failure becomes a fixed status with a short fixed reason;
//   - opaque tunnels (admitted hosts without bound credentials) are relayed
//     here, not by goproxy, with the ClientHello's SNI checked against the
//     authority; tunnels to hosts with bound credentials are terminated with
//     a leaf of the session CA (adapters/proxy/ca), and every request inside
//     must name the authority again and pass the policy again.
//
// Decisions worth knowing:
//
//   - Placeholders are substituted in request header values and (for
//     credentials enabled for "body") the request body, never in the request
//     URI: URLs end up in origin logs, and the contract names headers and
//     body only. A placeholder in the query travels literally.
//   - A CONNECT tunnel whose first client bytes are not a TLS handshake
//     record is relayed as-is (SSH, plain protocols); one whose ClientHello
//     names another host (SNI, including an ECH outer name) is closed. The
//     server→client direction starts at once, so server-first protocols work.
//   - Inside an intercepted tunnel a client may also speak plain HTTP; it is
//     then forwarded as plain HTTP to the authority, with the same checks.
//   - A traceparent sent by the sandbox becomes a link of the span and travels
//     to the origin unchanged; the gate never injects its own context.
//   - Tunnels carry no deadline once in use (long streams must live); they
//     are bounded by Options.MaxTunnels instead, and Revoke and Shutdown
//     close them (also one still dialling). An intercepted tunnel must
//     finish its TLS handshake and first request head within
//     Options.HeaderTimeout, and each request head inside it is capped at
//     1 MiB, as goproxy reads them without a limit.
//   - With credentials bound, the upstream request loses Accept-Encoding
//     and Range, and a response with a Content-Encoding other than identity
//     gets 502: the redactor sees only whole, unencoded bodies.
//   - At most 8 request bodies are substituted (and held in memory) at
//     once; a request over that gets 429.
//   - Tunnels and upgraded connections that move no byte either way for
//     Options.TunnelIdleTimeout (5 min) are closed; an intercepted tunnel
//     awaiting a response head is not idle.
//   - With credentials bound, echo redaction also replaces the reason
//     phrase by the standard one and drops headers whose name holds a
//     secret; a WebSocket upgrade is refused (403): its frames would pass
//     the redactor by.
//   - Every header with a "proxy" word in its name is dropped both ways
//     (Proxy-*, X-Upstream-Https-Proxy, …): it steers proxies, not origins.
package proxy
