// Package checkpoint implements ports.CheckpointStore on a local directory:
// one file per session, <dir>/<session id>.tar, mode 0600 in a 0700
// directory. A Put writes a temporary file beside the target, syncs it,
// renames it over the target and syncs the directory, so a crash leaves
// either the previous checkpoint or the new one, never a mix; a Put over
// the bound removes its temporary file.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// tempPrefix marks a Put in progress; Prepare removes those a crash left.
const tempPrefix = ".put-"

// Dir is a ports.CheckpointStore in one local directory.
type Dir struct {
	dir      string
	maxBytes int64
}

var _ ports.CheckpointStore = (*Dir)(nil)

// New returns the store in dir, holding checkpoints of at most maxBytes
// each. It touches nothing: the directory is created by Prepare or the
// first Put.
func New(dir string, maxBytes int64) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("checkpoint dir: must not be empty")
	}
	if maxBytes <= 0 {
		return nil, fmt.Errorf("checkpoint max bytes: must be positive, got %d", maxBytes)
	}
	return &Dir{dir: dir, maxBytes: maxBytes}, nil
}

// Prepare creates the directory (0700: workdirs may hold anything) and
// removes the temporary files of Puts a crash interrupted.
func (d *Dir) Prepare() error {
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint dir: %w", err)
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("checkpoint dir: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			_ = os.Remove(filepath.Join(d.dir, e.Name()))
		}
	}
	return nil
}

// path is the session's checkpoint file. A set id is a safe file name by
// construction (domain.ID); the zero id, which would name ".tar", is refused.
func (d *Dir) path(sid domain.ID) (string, error) {
	if err := sid.Required(); err != nil {
		return "", err
	}
	return filepath.Join(d.dir, sid.String()+".tar"), nil
}

// Put stores src as the session's checkpoint (see ports.CheckpointStore).
func (d *Dir) Put(ctx context.Context, sid domain.ID, src io.Reader) (int64, error) {
	dst, err := d.path(sid)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	// CreateTemp makes the file 0600.
	f, err := os.CreateTemp(d.dir, tempPrefix+sid.String()+"-*")
	if err != nil {
		return 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	n, err := d.write(ctx, f, src)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		_ = os.Remove(f.Name())
		return 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	if err := syncDir(d.dir); err != nil {
		return 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	return n, nil
}

// write copies at most maxBytes of src into f, syncs and closes it.
func (d *Dir) write(ctx context.Context, f *os.File, src io.Reader) (int64, error) {
	n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, src}, d.maxBytes+1))
	switch {
	case err != nil:
		return 0, err
	case n > d.maxBytes:
		return 0, fmt.Errorf("%w: more than %d bytes (SANDGATE_CHECKPOINT_MAX_BYTES)", ports.ErrCheckpointTooLarge, d.maxBytes)
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return n, f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return f.Sync()
}

// Get opens the session's checkpoint.
func (d *Dir) Get(_ context.Context, sid domain.ID) (io.ReadCloser, int64, error) {
	p, err := d.path(sid)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("session %s: %w", sid, ports.ErrCheckpointNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	return f, st.Size(), nil
}

// Delete removes the session's checkpoint, if any.
func (d *Dir) Delete(_ context.Context, sid domain.ID) error {
	p, err := d.path(sid)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint %s: %w", sid, err)
	}
	return nil
}

// List returns the checkpoints in the directory, dated by their file's
// modification time (the rename of their Put). A missing directory holds
// none; files that are not <session id>.tar (a Put in progress, anything
// else) are not checkpoints.
func (d *Dir) List(ctx context.Context) ([]ports.StoredCheckpoint, error) {
	entries, err := os.ReadDir(d.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint dir: %w", err)
	}
	var out []ports.StoredCheckpoint
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, ok := strings.CutSuffix(e.Name(), ".tar")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		sid, err := domain.ParseSessionID(name)
		if err != nil {
			continue // not a checkpoint of ours: a read is an edge, parse it
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since ReadDir
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint dir: %w", err)
		}
		out = append(out, ports.StoredCheckpoint{ID: sid, Size: info.Size(), Stored: info.ModTime()})
	}
	return out, nil
}

// ctxReader stops a copy once the context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
