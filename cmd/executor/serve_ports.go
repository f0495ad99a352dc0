package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"sync"

	"github.com/sandgate/sandgate/cmd/executor/internal/config"
)

// secretKey returns the executor's secret key for the API's signed preview
// URLs, read when the handler asks for it; a key that cannot be had turns
// signing off (logged), the store's start having failed on it already.
func secretKey(cfg config.Config, log *slog.Logger) func() []byte {
	return func() []byte { return loadKey(cfg, log, "signed preview URLs are off") }
}

// agentKey returns the key the in-sandbox agents' daemon tokens derive
// from (agentwire.Token), read once, when the first agent starts: an HMAC
// of the secret key under a label of its own, so it is no other use's key,
// and as lasting as the secret key, so a restarted executor reaches the
// daemons (and procs) its predecessor started. Without a secret key each
// agent stream serves alone.
func agentKey(cfg config.Config, log *slog.Logger) func() []byte {
	return sync.OnceValue(func() []byte {
		key := loadKey(cfg, log, "procs end with their agent stream")
		if key == nil {
			return nil
		}
		m := hmac.New(sha256.New, key)
		_, _ = m.Write([]byte("sandgate in-sandbox agent daemon token"))
		return m.Sum(nil)
	})
}

func loadKey(cfg config.Config, log *slog.Logger, without string) []byte {
	key, err := cfg.LoadOrCreateKey()
	if err != nil {
		log.Error(without+": no secret key", "error", err)
		return nil
	}
	return key
}
