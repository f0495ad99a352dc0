package gatewire

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A gate token is TokenPrefix + 32 random bytes in lower-case hex
// (CONTRACT §0). Only its SHA-256 (TokenHash) is ever stored.
const (
	tokenRandomBytes = 32
	// TokenLen is the length of every gate token.
	TokenLen = len(TokenPrefix) + 2*tokenRandomBytes
)

var (
	// ErrUnauthorized: the gate token is unknown, revoked or malformed.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalidToken: a token handed to Persist is not a well-formed gate
	// token.
	ErrInvalidToken = errors.New("invalid gate token")
)

// NewToken returns a fresh gate token from crypto/rand.
func NewToken() string {
	var b [tokenRandomBytes]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand: it crashes the program instead)
	return TokenPrefix + hex.EncodeToString(b[:])
}

// ValidateToken checks the shape of a gate token: the prefix, the length and
// lower-case hex. The error wraps ErrInvalidToken and never quotes the token,
// which may be a real one with a typo.
func ValidateToken(token string) error {
	body, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return fmt.Errorf("%w: must start with %q", ErrInvalidToken, TokenPrefix)
	}
	if len(token) != TokenLen {
		return fmt.Errorf("%w: must be %d characters, got %d", ErrInvalidToken, TokenLen, len(token))
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: character at offset %d is not lower-case hex", ErrInvalidToken, len(TokenPrefix)+i)
		}
	}
	return nil
}

// TokenHash is what the store keeps and looks tokens up by: the lower-case
// hex SHA-256 of the token. Looking up by hash makes the comparison
// independent of the plaintext (no timing leak of a prefix match).
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
