package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/cmd/executor/internal/config"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// errStoreClosed is the readiness answer of a store not (or no longer) open.
var errStoreClosed = errors.New("session store is not open")

// lazyStore is the ports.SessionStore the graph hands out before the database
// is open: constructors start nothing, so the store opens in OnStart. Its
// hook runs before any hook of what depends on it (the server), so nothing
// calls the embedded store before it is set.
type lazyStore struct {
	ports.SessionStore
}

// open resolves the secrets key (creating the key file on first start) and
// opens the store named by the configuration.
func (s *lazyStore) open(ctx context.Context, cfg config.Config) error {
	key, err := cfg.LoadOrCreateKey()
	if err != nil {
		return err
	}
	if err := ensureSQLiteDir(cfg.DatabaseURL); err != nil {
		return err
	}
	st, err := sessionstore.Open(ctx, cfg.DatabaseURL, key)
	if err != nil {
		return err
	}
	s.SessionStore = st
	return nil
}

// Ping reports whether the database answers.
func (s *lazyStore) Ping(ctx context.Context) error {
	p, ok := s.SessionStore.(interface{ Ping(context.Context) error })
	if !ok {
		return errStoreClosed
	}
	return p.Ping(ctx)
}

// ProbeWrite reports whether the database takes a write (readiness).
func (s *lazyStore) ProbeWrite(ctx context.Context) error {
	p, ok := s.SessionStore.(writeProber)
	if !ok {
		return errStoreClosed
	}
	return p.ProbeWrite(ctx)
}

// Lock takes the session lock of the open store (ports.SessionLocker), so
// that the service finds it through this wrapper.
func (s *lazyStore) Lock(ctx context.Context, sid domain.ID) (func(), error) {
	l, ok := s.SessionStore.(ports.SessionLocker)
	if !ok {
		return nil, errStoreClosed
	}
	return l.Lock(ctx, sid)
}

// Close closes the store if it was opened.
func (s *lazyStore) Close() error {
	if s.SessionStore == nil {
		return nil
	}
	return s.SessionStore.Close()
}

// ensureSQLiteDir creates the directory of a sqlite:// database (0700: it
// holds sealed secrets), so the laptop default ./.sandgate/ needs no setup.
func ensureSQLiteDir(databaseURL string) error {
	path, ok := strings.CutPrefix(databaseURL, "sqlite://")
	if !ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("SANDGATE_DATABASE_URL: %w", err)
	}
	return nil
}
