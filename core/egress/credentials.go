package egress

import (
	"fmt"
	"io"

	"github.com/sandgate/sandgate/core/gatewire"
)

// MaxBodyBytes is the largest request body the gate substitutes in
// (C-GW-3); a bigger one is refused with ErrBodyTooLarge (413).
const MaxBodyBytes = 10 << 20

// Bound is the set of credentials bound to one admitted target: those whose
// allowed_hosts match the target's host. It is what the proxy needs per
// request: whether to intercept TLS at all (B-1), the replacers for
// headers and body, and the redactor for echoes.
type Bound struct {
	creds []credential
}

// Credentials returns the credentials bound to t. It is empty unless the
// policy admits t: a credential's own hosts never widen the policy. A
// credential entry with a port binds on that port only; one without binds
// on every port the policy admits for the host (the host is what the
// secret is entrusted to; the allowlist decides its ports).
func (p *Policy) Credentials(t Target) Bound {
	if p == nil || !p.admit(t).Allowed {
		return Bound{}
	}
	var b Bound
	for _, c := range p.credentials {
		for _, pat := range c.hosts {
			if pat.MatchHost(t.Host) && (!pat.hasPort() || pat.MatchPort(t.Port)) {
				b.creds = append(b.creds, c)
				break
			}
		}
	}
	return b
}

// Empty reports whether no credential is bound: the proxy then leaves a
// CONNECT tunnel opaque instead of terminating TLS.
func (b Bound) Empty() bool { return len(b.creds) == 0 }

// IDs returns the ids of the bound credentials in config order.
func (b Bound) IDs() []string {
	ids := make([]string, len(b.creds))
	for i, c := range b.creds {
		ids[i] = c.ID
	}
	return ids
}

// Substituter replaces the placeholders of the bound credentials enabled at
// loc by their secrets. Every other placeholder travels literally.
func (b Bound) Substituter(loc gatewire.Location) *Replacer {
	var pairs []pair
	for _, c := range b.creds {
		if c.Enabled(loc) {
			pairs = append(pairs, pair{old: []byte(c.Placeholder), new: []byte(c.Secret.Reveal()), id: c.ID})
		}
	}
	return newReplacer(pairs)
}

// Redactor replaces every bound secret an origin echoes back in a response
// by its placeholder (B-1), in each of the forms echoForms lists (literal,
// JSON-escaped, percent-encoded, base64). It covers all bound credentials,
// not only those substituted into this request: an origin that knows a key
// may return it unasked. Stream it with Reader so chunk boundaries cannot
// split a secret past it.
func (b Bound) Redactor() *Replacer {
	pairs := make([]pair, 0, len(b.creds))
	for _, c := range b.creds {
		for _, form := range echoForms(c.Secret.Reveal()) {
			pairs = append(pairs, pair{old: []byte(form), new: []byte(c.Placeholder), id: c.ID})
		}
	}
	return newReplacer(pairs)
}

// SubstituteBody reads a whole request body (at most MaxBodyBytes, else
// ErrBodyTooLarge) and substitutes in it, returning the new body and the ids
// of the credentials used. The proxy calls it only when the Substituter for
// LocationBody is not empty; other bodies stream through untouched and
// unbounded.
func SubstituteBody(r *Replacer, body io.Reader) ([]byte, []string, error) {
	data, err := io.ReadAll(io.LimitReader(body, MaxBodyBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, MaxBodyBytes)
	}
	out, used := r.Replace(data)
	return out, used, nil
}

// CredentialPatterns returns the union of every credential's allowed_hosts
// patterns, each entry once, in config order. The gate mints its
// interception CA from it (B-1): the CA's name constraints then permit only
// hosts that can carry a credential. A nil Policy has none.
func (p *Policy) CredentialPatterns() []Pattern {
	if p == nil {
		return nil
	}
	var out []Pattern
	seen := map[string]bool{}
	for _, c := range p.credentials {
		for _, pat := range c.hosts {
			if !seen[pat.String()] {
				seen[pat.String()] = true
				out = append(out, pat)
			}
		}
	}
	return out
}
