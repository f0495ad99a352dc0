package executor

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/adapters/sessionstore"
	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports/portfake"
)

// TestProvisionsSerialisedAcrossServices: two services on one store file
// (as two executors on one database) take the store's session lock, so a
// provision of a session through one waits for the other's; a waiter whose
// context ends gives up without reaching the provider.
func TestProvisionsSerialisedAcrossServices(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	prov := portfake.NewProvider()
	svcs := make([]*Service, 2)
	for i := range svcs {
		store, err := sessionstore.OpenSQLite(context.Background(), path, bytes.Repeat([]byte{7}, session.KeyLen))
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		svcs[i] = New(prov, store, defaults)
	}
	gate := portfake.NewGate()
	prov.Hook(portfake.OpProvision, gate.Hook)
	a := domain.NewID("ses")
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, svc := range svcs {
		wg.Go(func() {
			_, err := svc.Provision(context.Background(), a, session.Request{})
			errs <- err
		})
	}
	require.Equal(t, a, waitFor(t, gate.Entered()))
	select {
	case sid := <-gate.Entered():
		t.Fatalf("the other service's provision of %s entered the provider while the first was in it", sid)
	case <-time.After(100 * time.Millisecond):
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := svcs[1].Provision(ctx, a, session.Request{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, svcs[1].Delete(ctx, a, false), context.DeadlineExceeded)

	gate.Release()
	require.Equal(t, a, waitFor(t, gate.Entered()))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, prov.MaxInFlight())
	require.Len(t, prov.Specs(), 2, "the timed-out calls never reached the provider")
	require.Empty(t, prov.Reaped())
	for _, svc := range svcs {
		require.Zero(t, svc.locks.held(), "lock entries leaked")
	}
}
