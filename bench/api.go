package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/app/executor"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// apiExecRow: `POST /v1/sessions/{id}/exec` of `true` through the executor's
// HTTP API (client, handler, service, SQLite store) against Sandbox.Exec in
// process on the same sandbox; the target is the overhead, median against
// median, of at most 2 ms.
func apiExecRow(ctx context.Context, e *env) (Row, error) {
	dir, err := os.MkdirTemp("", "sandgate-bench-api-")
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	key := make([]byte, session.KeyLen)
	_, _ = rand.Read(key)
	store, err := sessionstore.OpenSQLite(ctx, filepath.Join(dir, "api.db"), key)
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = store.Close() }()
	svc := executor.New(e.p, store, session.Defaults{Image: e.image})
	srv := httptest.NewServer(httpapi.NewAPIHandler(svc, httpapi.APIOptions{Token: "bench-api-token-0123"}))
	defer srv.Close()
	c, err := httpapi.NewClient(srv.URL, "bench-api-token-0123", nil)
	if err != nil {
		return Row{}, err
	}
	req := sandbox.ExecRequest{Command: "true"}
	a, b, err := interleave(e.iterations(30, 5), func(int) error {
		res, err := c.Exec(ctx, e.sid, req)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("api exec: exit %d", res.ExitCode)
		}
		return err
	}, func(int) error { return execOK(ctx, e.sb, 0) })
	if err != nil {
		return Row{}, err
	}
	added := a - b
	return Row{Ours: a.Round(10 * time.Microsecond).String(), Baseline: b.Round(10 * time.Microsecond).String(),
		Ratio: float64(a) / float64(b), Note: fmt.Sprintf("added %s (target <=2ms)", added.Round(10*time.Microsecond)),
		extraMiss: added > 2*time.Millisecond}, nil
}
