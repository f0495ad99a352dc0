package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/core/gatewire"
	"github.com/sandgate/sandgate/ports"
)

// Retry cadence until the gate is first ready (B-3: provisioning waits for
// it, so a transient error must not cost a whole fetch interval).
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// loop keeps the proxy's config fresh (C-GW-1, B-3): the first fetch at
// once, quick retries until the gate is ready, then one fetch every
// interval; 401 revokes the proxy and ends the loop (the gate stays alive
// and unhealthy: exiting would re-run startup in a crash loop).
type loop struct {
	fetch    ports.GateConfigFetcher
	proxy    ports.GateProxy
	caFile   string
	interval time.Duration
	log      *slog.Logger
	// ready, if set, is called once, after the CA file is written and the
	// "gate ready" line logged.
	ready      func()
	readyAttrs []any

	// firstRetry and maxRetry override the defaults (tests).
	firstRetry, maxRetry time.Duration

	isReady bool
	last    [sha256.Size]byte // of the body in force, to skip re-applying it
}

// run loops until ctx is done or the token is revoked.
func (l *loop) run(ctx context.Context) {
	retry := l.firstRetry
	if retry == 0 {
		retry = firstRetry
	}
	maxR := l.maxRetry
	if maxR == 0 {
		maxR = maxRetry
	}
	for {
		if l.once(ctx) == ports.GateRevoked {
			return
		}
		wait := l.interval
		if !l.isReady {
			wait, retry = retry, min(2*retry, maxR)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once fetches and applies the config one time.
func (l *loop) once(ctx context.Context) ports.GateOutcome {
	body, o, err := l.fetch.Fetch(ctx)
	switch {
	case ctx.Err() != nil:
		return ports.GateFailed
	case o == ports.GateRevoked:
		l.proxy.Revoke()
		l.log.Error("gate token revoked: denying everything and no longer fetching", "err", err)
		return ports.GateRevoked
	case o != ports.GateFetched:
		l.log.Warn("gate config fetch failed; keeping the last good config", "err", err, "ready", l.isReady)
		return ports.GateFailed
	}
	sum := sha256.Sum256(body)
	if l.isReady && sum == l.last {
		return ports.GateFetched
	}
	cfg, err := gatewire.Parse(body)
	if err == nil {
		err = l.proxy.SetConfig(cfg)
	}
	if err != nil {
		// Parse and Compile errors never quote a secret.
		l.log.Error("gate config refused; keeping the last good config", "err", err, "ready", l.isReady)
		return ports.GateFailed
	}
	l.last = sum
	if !l.isReady {
		if err := l.becomeReady(cfg); err != nil {
			l.log.Error("gate not ready", "err", err)
			return ports.GateFailed
		}
	} else {
		l.log.Info("gate config updated", "config", cfg)
	}
	return ports.GateFetched
}

// becomeReady writes the CA certificate, then says the gate is ready:
// nothing may report ready before the sandbox can trust the CA.
func (l *loop) becomeReady(cfg gatewire.Config) error {
	pem := l.proxy.CACertPEM()
	if len(pem) == 0 {
		return errors.New("the proxy has no CA certificate after a good config")
	}
	if err := writeFileAtomic(l.caFile, pem, 0o644); err != nil {
		return fmt.Errorf("GATE_CA_FILE: %w", err)
	}
	l.isReady = true
	l.log.Info("gate ready", append(l.readyAttrs, "ca_file", l.caFile, "config", cfg)...)
	if l.ready != nil {
		l.ready()
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old file or the whole new
// one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	return nil
}
