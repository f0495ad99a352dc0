// Package domain holds the value types every layer of sandgate shares: the
// session identity and the networking policy. It is pure: no I/O, standard
// library only.
package domain

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
)

// ID identifies a session (and anything else sandgate mints an id for). Its
// value is valid by construction: the field is unexported, so a non-zero ID
// comes only from NewID, ParseID or ParseSessionID (MustParseSessionID for
// constants), and every one of them is a valid session id — fit for container
// names, pod names, label values and paths. An id is therefore parsed once,
// where it enters from outside (the HTTP path, CLI arguments, the gate's
// environment in gatewire.ParseEnv, the session store's and checkpoint
// directory's reads, a provider adopting a container or pod by its label), and
// inner layers trust the type instead of checking again. The one invalid value
// a Go type cannot exclude is the zero ID (a field left unset); the ports that
// promise to refuse it call Required. It travels as text (MarshalText), so
// JSON, labels and names see the same string as before.
type ID struct{ s string }

// crockford is Crockford's base32 alphabet in lower case: no i, l, o or u, so
// an id read aloud or retyped cannot be confused.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

const (
	idRandomBytes = 15 // 120 bits: 24 base32 characters exactly
	idBodyLen     = idRandomBytes * 8 / 5
	maxPrefixLen  = 16
)

// ErrInvalidID is matched with errors.Is for every malformed id ParseID sees.
var ErrInvalidID = errors.New("invalid id")

// NewID returns prefix + "_" + 24 characters of lower-case Crockford base32
// encoding 15 random bytes (CONTRACT §0), e.g. "ses_8m3k0z…". The prefix must
// itself be valid (see ValidPrefix); NewID panics otherwise, because every
// prefix is a constant in our own code and a bad one is a programming error.
func NewID(prefix string) ID {
	if err := validPrefix(prefix); err != nil {
		panic(fmt.Sprintf("domain.NewID(%q): %v", prefix, err))
	}
	var b [idRandomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("domain.NewID: crypto/rand failed: %v", err))
	}
	return ID{prefix + "_" + encodeBase32(b[:])}
}

// encodeBase32 encodes b (whose bit length is a multiple of 5) big-endian, five
// bits per character.
func encodeBase32(b []byte) string {
	var sb strings.Builder
	var acc uint
	var bits uint
	for _, c := range b {
		acc = acc<<8 | uint(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			sb.WriteByte(crockford[(acc>>bits)&31])
		}
	}
	return sb.String()
}

// ParseID validates s as an id with the given prefix in the canonical form
// NewID produces and returns it. Ids reach container names, pod names, labels
// and URLs, so anything else — other characters, upper case, another length or
// prefix — is refused with an error wrapping ErrInvalidID that says what is
// wrong.
func ParseID(prefix, s string) (ID, error) {
	if err := validPrefix(prefix); err != nil {
		return ID{}, fmt.Errorf("%w: %w", ErrInvalidID, err)
	}
	body, ok := strings.CutPrefix(s, prefix+"_")
	if !ok {
		return ID{}, fmt.Errorf("%w %q: must start with %q", ErrInvalidID, Clip(s), prefix+"_")
	}
	if len(body) != idBodyLen {
		return ID{}, fmt.Errorf("%w %q: want %d characters after %q, got %d", ErrInvalidID, Clip(s), idBodyLen, prefix+"_", len(body))
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(crockford, body[i]) < 0 {
			return ID{}, fmt.Errorf("%w %q: character %q at offset %d is not lower-case Crockford base32", ErrInvalidID, Clip(s), body[i], len(prefix)+1+i)
		}
	}
	// The last character carries only the low bits of the final byte group;
	// with 120 bits every character is fully used, so nothing else to check.
	return ID{s}, nil
}

// validPrefix accepts 1..16 lower-case ASCII letters.
func validPrefix(p string) error {
	if p == "" || len(p) > maxPrefixLen {
		return fmt.Errorf("prefix %q must be 1 to %d lower-case letters", Clip(p), maxPrefixLen)
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 'a' || p[i] > 'z' {
			return fmt.Errorf("prefix %q must be 1 to %d lower-case letters", Clip(p), maxPrefixLen)
		}
	}
	return nil
}

// IsZero reports whether the id is empty (never assigned).
func (id ID) IsZero() bool { return id.s == "" }

// String returns the id verbatim.
func (id ID) String() string { return id.s }

// Compare orders ids by their text, for slices.SortFunc.
func (id ID) Compare(other ID) int { return strings.Compare(id.s, other.s) }

// errNoSessionID is what Required answers for the zero ID.
var errNoSessionID = fmt.Errorf("%w: session id is empty", ErrInvalidID)

// Required returns an error wrapping ErrInvalidID for the zero ID and nil for
// any other: a non-zero ID is valid by construction, so the zero value (a
// field left unset) is the only invalid id left for a port to refuse.
func (id ID) Required() error {
	if id.IsZero() {
		return errNoSessionID
	}
	return nil
}

// MarshalText returns the id's text, so JSON and the like carry the string.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.s), nil }

// UnmarshalText parses text as a session id (ParseSessionID); empty text is
// the zero ID, so the zero value round-trips and a missing id is left for the
// document's own validation to report.
func (id *ID) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*id = ID{}
		return nil
	}
	parsed, err := ParseSessionID(string(text))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// maxSessionIDLen keeps "sandgate-" + id within a 63-character DNS label (the
// Kubernetes pod name) and a label value.
const maxSessionIDLen = 54

// ParseSessionID parses s, an id that becomes container names, pod names and
// label values: 1..54 characters of lower-case letters, digits and '_',
// starting and ending with a letter or digit. Lower case only and no '-',
// because the pod name lower-cases the id and maps '_' to '-': two ids that
// differed only there would name the same pod. Callers may choose their own
// session ids, so this is wider than ParseID's canonical form, which it
// includes. The error wraps ErrInvalidID and says what is wrong.
func ParseSessionID(s string) (ID, error) {
	if s == "" {
		return ID{}, errNoSessionID
	}
	if len(s) > maxSessionIDLen {
		return ID{}, fmt.Errorf("%w %q: session id longer than %d characters", ErrInvalidID, Clip(s), maxSessionIDLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '_' || i == 0 || i == len(s)-1) {
			return ID{}, fmt.Errorf("%w %q: session id may hold only lower-case letters, digits and inner '_' (offset %d)", ErrInvalidID, Clip(s), i)
		}
	}
	return ID{s}, nil
}

// MustParseSessionID is ParseSessionID for ids written in the code (test
// fixtures, constants): it panics on an invalid one, like regexp.MustCompile,
// because that is a programming error.
func MustParseSessionID(s string) ID {
	id, err := ParseSessionID(s)
	if err != nil {
		panic(fmt.Sprintf("domain.MustParseSessionID(%q): %v", s, err))
	}
	return id
}
