package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyLen is the length of the secrets key (session.Sealer).
const KeyLen = 32

// parseKey decodes a 32-byte key written as 64 hex digits or as base64
// (standard or URL alphabet, padded or not). Empty is nil. The value never
// appears in the error.
func parseKey(name, s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeyLen {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeyLen {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s: must be %d bytes written as base64 or hex (openssl rand -base64 32)", name, KeyLen)
}

// LoadOrCreateKey returns c.SecretKey, or the key in c.KeyFile, creating the
// file (and its directory, 0700) with a fresh random key, mode 0600, when it
// does not exist. A key file that others may read is refused: it opens every
// stored secret. Losing the file makes the stored secrets unreadable.
func (c Config) LoadOrCreateKey() ([]byte, error) {
	if c.SecretKey != nil {
		return c.SecretKey, nil
	}
	key, err := readKeyFile(c.KeyFile)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return createKeyFile(c.KeyFile)
}

func readKeyFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: %s is readable by others (mode %v); chmod 600 it", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: %w", err)
	}
	return parseKey("SANDGATE_SECRET_KEY_FILE", string(b))
}

// createKeyFile writes a new key with O_EXCL, so two executors starting at
// once never overwrite each other's key: the loser reads the winner's.
func createKeyFile(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: %w", err)
	}
	key := make([]byte, KeyLen)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("SANDGATE_SECRET_KEY_FILE: write: %w", err)
	}
	return key, nil
}
