package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/gatewire"
)

// KeyLen is the size of the secrets key: AES-256.
const KeyLen = 32

// ErrDecrypt: a stored secret does not open under the key and its row's
// session and credential (a wrong key, a tampered or moved ciphertext).
var ErrDecrypt = errors.New("stored secret cannot be decrypted")

// sealVersion starts every sealed value, so a future key rotation can tell
// formats apart.
const sealVersion = "v1:"

// Sealer encrypts secrets at rest with AES-256-GCM: a random nonce per value
// and the session id and credential id as additional data, so a ciphertext
// copied to another row (another session, another credential) fails to open.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer for a 32-byte key. Any other size is refused
// with an error that gives the size (never the key).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeyLen {
		return nil, fmt.Errorf("secrets key: must be %d bytes, got %d", KeyLen, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// ParseKey decodes a key from configuration: 64 hex characters or the
// standard base64 of 32 bytes. The error never echoes the input.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeyLen {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == KeyLen {
		return k, nil
	}
	return nil, fmt.Errorf("secrets key: want %d hex characters or the base64 of %d bytes (got %d characters)", 2*KeyLen, KeyLen, len(s))
}

// Seal encrypts secret for one row and returns printable text: the version,
// then base64 of nonce and ciphertext.
func (s *Sealer) Seal(sid domain.ID, credentialID string, secret gatewire.Secret) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+secret.Len()+s.aead.Overhead())
	_, _ = rand.Read(nonce) // never fails (crypto/rand: it crashes the program instead)
	out := s.aead.Seal(nonce, nonce, []byte(secret.Reveal()), additionalData(sid, credentialID))
	return sealVersion + base64.StdEncoding.EncodeToString(out)
}

// Open decrypts what Seal returned for the same session and credential. Any
// failure wraps ErrDecrypt and names the row, never the content.
func (s *Sealer) Open(sid domain.ID, credentialID, sealed string) (gatewire.Secret, error) {
	body, ok := strings.CutPrefix(sealed, sealVersion)
	if !ok {
		return gatewire.Secret{}, fmt.Errorf("%w: session %s credential %.64q: unknown format", ErrDecrypt, sid, credentialID)
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return gatewire.Secret{}, fmt.Errorf("%w: session %s credential %.64q: malformed ciphertext", ErrDecrypt, sid, credentialID)
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], additionalData(sid, credentialID))
	if err != nil {
		return gatewire.Secret{}, fmt.Errorf("%w: session %s credential %.64q: authentication failed (wrong key or moved ciphertext)", ErrDecrypt, sid, credentialID)
	}
	return gatewire.NewSecret(string(plain)), nil
}

// additionalData binds a ciphertext to its row. The lengths make the
// encoding unambiguous whatever bytes the ids hold.
func additionalData(sid domain.ID, credentialID string) []byte {
	return fmt.Appendf(nil, "sandgate/credential/v1\x00%d:%s\x00%d:%s", len(sid.String()), sid, len(credentialID), credentialID)
}
