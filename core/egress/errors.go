// Package egress is the egress gate's pure decision logic: host parsing and
// matching (CONTRACT C-GW-2), the dial floor that refuses internal addresses
// in every policy mode (C-GW-5), the policy decision, credential placeholders
// and their one-pass substitution (C-GW-3), and the redaction of secrets an
// origin echoes back (B-1). The proxy adapter calls it; nothing here does I/O.
package egress

import "errors"

// Sentinels, matched with errors.Is.
var (
	// ErrInvalidHost: a request target or host is not a well-formed host
	// name, IP literal or host:port.
	ErrInvalidHost = errors.New("invalid host")
	// ErrNonCanonicalIP: a host looks numeric but is not a canonical IP
	// literal (2130706433, 0x7f000001, 127.1, 0177.0.0.1, 1.2.3): resolvers
	// disagree about what such spellings mean, so the gate never guesses.
	ErrNonCanonicalIP = errors.New("numeric host is not a canonical IP address")
	// ErrInvalidPattern: an allowed_hosts entry is not an exact name, a
	// "*.suffix" wildcard, an IP literal or a CIDR.
	ErrInvalidPattern = errors.New("invalid host pattern")
	// ErrBodyTooLarge: a body to substitute exceeds MaxBodyBytes; the proxy
	// answers 413.
	ErrBodyTooLarge = errors.New("body too large to substitute")
)
