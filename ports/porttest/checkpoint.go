package porttest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// CheckpointHarness is what a ports.CheckpointStore implementation hands
// RunCheckpointStore.
type CheckpointHarness struct {
	// Store is the implementation under test, bounded to MaxBytes per
	// checkpoint. Rows use fresh session ids, so one store may serve all.
	Store    ports.CheckpointStore
	MaxBytes int64
	// AtRest returns the total bytes the store keeps at rest (files,
	// objects), so the suite can prove a failed Put left no partial data.
	AtRest func(t *testing.T) int64
}

// RunCheckpointStore runs the conformance suite of ports.CheckpointStore.
// open is called once per row.
func RunCheckpointStore(t *testing.T, open func(t *testing.T) CheckpointHarness) {
	t.Helper()
	rows := []struct {
		name string
		run  func(t *testing.T, h CheckpointHarness)
	}{
		{"round-trip", cpRoundTrip},
		{"put-replaces", cpReplace},
		{"missing-and-deleted", cpMissing},
		{"bound-exact-fits", cpBoundFits},
		{"too-large-keeps-previous", cpTooLarge},
		{"failing-source-keeps-previous", cpFailingSource},
		{"bad-id-refused", cpBadID},
		{"list", cpList},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			r.run(t, open(t))
		})
	}
}

// cpContent returns the checkpoint's bytes, or fails.
func cpContent(t *testing.T, s ports.CheckpointStore, sid domain.ID) []byte {
	t.Helper()
	rc, size, err := s.Get(context.Background(), sid)
	require.NoError(t, err)
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size, "Get's size")
	return data
}

func cpPut(t *testing.T, s ports.CheckpointStore, sid domain.ID, data []byte) {
	t.Helper()
	n, err := s.Put(context.Background(), sid, bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), n)
}

func cpRoundTrip(t *testing.T, h CheckpointHarness) {
	sid := domain.NewID("ses")
	data := bytes.Repeat([]byte("tar\x00"), int(h.MaxBytes/8))
	cpPut(t, h.Store, sid, data)
	require.Equal(t, data, cpContent(t, h.Store, sid))
	require.Equal(t, data, cpContent(t, h.Store, sid), "Get does not consume the checkpoint")
	cpPut(t, h.Store, domain.NewID("ses"), nil)
}

func cpReplace(t *testing.T, h CheckpointHarness) {
	sid := domain.NewID("ses")
	cpPut(t, h.Store, sid, []byte("first, longer content"))
	cpPut(t, h.Store, sid, []byte("second"))
	require.Equal(t, "second", string(cpContent(t, h.Store, sid)))
}

func cpMissing(t *testing.T, h CheckpointHarness) {
	ctx := context.Background()
	sid := domain.NewID("ses")
	_, _, err := h.Store.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
	require.NoError(t, h.Store.Delete(ctx, sid), "deleting none is a no-op")
	cpPut(t, h.Store, sid, []byte("x"))
	require.NoError(t, h.Store.Delete(ctx, sid))
	_, _, err = h.Store.Get(ctx, sid)
	require.ErrorIs(t, err, ports.ErrCheckpointNotFound)
}

// cpList: List reports each checkpoint once with its size and a write time
// within the test's run, nothing for a deleted one or a Put that failed.
func cpList(t *testing.T, h CheckpointHarness) {
	ctx := context.Background()
	start := time.Now().Add(-time.Second) // file times may be coarser than the clock
	a, b := domain.NewID("ses"), domain.NewID("ses")
	cpPut(t, h.Store, a, []byte("aaa"))
	cpPut(t, h.Store, b, []byte("bb"))
	cpPut(t, h.Store, b, []byte("bbbb"))
	gone := domain.NewID("ses")
	cpPut(t, h.Store, gone, []byte("x"))
	require.NoError(t, h.Store.Delete(ctx, gone))
	_, err := h.Store.Put(ctx, domain.NewID("ses"), bytes.NewReader(make([]byte, h.MaxBytes+1)))
	require.ErrorIs(t, err, ports.ErrCheckpointTooLarge)
	list, err := h.Store.List(ctx)
	require.NoError(t, err)
	sizes := map[domain.ID]int64{}
	for _, c := range list {
		require.NotContains(t, sizes, c.ID, "listed once")
		sizes[c.ID] = c.Size
		require.False(t, c.Stored.Before(start), "stored %s", c.Stored)
		require.False(t, c.Stored.After(time.Now().Add(time.Second)), "stored %s", c.Stored)
	}
	require.Equal(t, map[domain.ID]int64{a: 3, b: 4}, sizes)
}

func cpBoundFits(t *testing.T, h CheckpointHarness) {
	sid := domain.NewID("ses")
	data := bytes.Repeat([]byte{'b'}, int(h.MaxBytes))
	cpPut(t, h.Store, sid, data)
	require.Equal(t, data, cpContent(t, h.Store, sid))
}

func cpTooLarge(t *testing.T, h CheckpointHarness) {
	sid := domain.NewID("ses")
	cpPut(t, h.Store, sid, []byte("previous"))
	before := h.AtRest(t)
	src := &countingReader{r: io.MultiReader(bytes.NewReader(make([]byte, h.MaxBytes+1)), endless{})}
	_, err := h.Store.Put(context.Background(), sid, src)
	require.ErrorIs(t, err, ports.ErrCheckpointTooLarge)
	require.Less(t, src.n, 2*h.MaxBytes+64<<10, "the store read far past its bound")
	require.Equal(t, "previous", string(cpContent(t, h.Store, sid)))
	require.Equal(t, before, h.AtRest(t), "a refused Put left data at rest")
}

func cpFailingSource(t *testing.T, h CheckpointHarness) {
	sid := domain.NewID("ses")
	cpPut(t, h.Store, sid, []byte("previous"))
	before := h.AtRest(t)
	boom := errors.New("export broke mid-stream")
	_, err := h.Store.Put(context.Background(), sid, io.MultiReader(strings.NewReader("partial"), errReader{boom}))
	require.ErrorIs(t, err, boom)
	require.Equal(t, "previous", string(cpContent(t, h.Store, sid)))
	require.Equal(t, before, h.AtRest(t), "a failed Put left data at rest")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.Store.Put(ctx, sid, strings.NewReader("never"))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, "previous", string(cpContent(t, h.Store, sid)))
}

func cpBadID(t *testing.T, h CheckpointHarness) {
	ctx := context.Background()
	unrepresentable(t, "../etc", "Bad")
	var unset domain.ID
	_, err := h.Store.Put(ctx, unset, strings.NewReader("x"))
	require.ErrorIs(t, err, domain.ErrInvalidID)
	_, _, err = h.Store.Get(ctx, unset)
	require.ErrorIs(t, err, domain.ErrInvalidID)
	require.ErrorIs(t, h.Store.Delete(ctx, unset), domain.ErrInvalidID)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// endless yields zeros forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
