package executor

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Batching of a restore's small files: one WriteFiles round trip carries at
// most restoreBatchBytes or restoreBatchFiles; a larger file streams alone.
const (
	restoreBatchBytes = 8 << 20
	restoreBatchFiles = 512
	restoreSmallFile  = 1 << 20
	// restoreScriptTimeout bounds each script making dirs, links and modes.
	restoreScriptTimeout = 2 * time.Minute
)

// restoreCheckpoint writes the session's checkpoint into its new sandbox's
// workdir, then deletes the checkpoint. Files travel through the Sandbox
// port (batched writes, or a stream for a large file); directories, links
// and permissions through scripts (RestoreScripts). Hard links,
// devices and FIFOs are skipped and counted in the log. A failure fails the
// provision and keeps the checkpoint; Provision reaps the half-restored
// sandbox (undoRestore), so a retried provision restores into a fresh one.
func (s *Service) restoreCheckpoint(ctx context.Context, sid domain.ID, sb ports.Sandbox, workdir string) error {
	rc, size, err := s.checkpoints.Get(ctx, sid)
	if errors.Is(err, ports.ErrCheckpointNotFound) {
		return nil // deleted meanwhile by another executor's restore
	}
	if err != nil {
		return fmt.Errorf("provision %s: restore: %w", sid, err)
	}
	defer func() { _ = rc.Close() }()
	r := restorer{ctx: ctx, sb: sb, workdir: workdir}
	if err := r.run(rc); err != nil {
		return fmt.Errorf("provision %s: restore the checkpoint (kept): %w", sid, err)
	}
	if err := s.checkpoints.Delete(ctx, sid); err != nil {
		return fmt.Errorf("provision %s: restored, but: %w", sid, err)
	}
	s.log.Info("restored checkpoint", "session", sid, "bytes", size, "files", r.files, "skipped", r.skipped)
	return nil
}

// restorer replays one tar into a sandbox.
type restorer struct {
	ctx     context.Context
	sb      ports.Sandbox
	workdir string
	batch   []sandbox.FileWrite
	bytes   int
	entries []RestoreEntry
	files   int
	skipped int
}

func (r *restorer) run(src io.Reader) error {
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ports.ErrBadCheckpoint, err)
		}
		if err := r.member(h, tr); err != nil {
			return err
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	for _, script := range RestoreScripts(r.entries) {
		if err := r.exec(script); err != nil {
			return err
		}
	}
	return nil
}

func (r *restorer) member(h *tar.Header, tr io.Reader) error {
	p, err := Reroot(r.workdir, h.Name)
	if err != nil {
		return err
	}
	mode := h.FileInfo().Mode().Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		r.entries = append(r.entries, RestoreEntry{Kind: RestoreDir, Path: p, Mode: mode})
	case tar.TypeSymlink:
		r.entries = append(r.entries, RestoreEntry{Kind: RestoreSymlink, Path: p, Target: h.Linkname})
	case tar.TypeReg:
		r.files++
		r.entries = append(r.entries, RestoreEntry{Kind: RestoreFile, Path: p, Mode: mode})
		return r.file(p, h.Size, tr)
	default:
		r.skipped++
	}
	return nil
}

// file batches a small file, or streams a large one on its own.
func (r *restorer) file(p string, size int64, tr io.Reader) error {
	if size > restoreSmallFile {
		return r.sb.WriteFileStream(r.ctx, p, tr, size)
	}
	data, err := io.ReadAll(io.LimitReader(tr, size))
	if err != nil {
		return fmt.Errorf("%w: %w", ports.ErrBadCheckpoint, err)
	}
	r.batch = append(r.batch, sandbox.FileWrite{Path: p, Data: data})
	r.bytes += len(data)
	if r.bytes >= restoreBatchBytes || len(r.batch) >= restoreBatchFiles {
		return r.flush()
	}
	return nil
}

func (r *restorer) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	err := r.sb.WriteFiles(r.ctx, r.batch)
	r.batch, r.bytes = nil, 0
	return err
}

func (r *restorer) exec(script string) error {
	res, err := r.sb.Exec(r.ctx, sandbox.ExecRequest{Command: script, Timeout: restoreScriptTimeout})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("restore script exited %d: %.512s", res.ExitCode, res.Stderr)
	}
	return nil
}

// checkpointUse is what a provision does with the session's checkpoint.
type checkpointUse int

const (
	// useNone: no checkpoint is stored (or no checkpoint store).
	useNone checkpointUse = iota
	// useRestore: no sandbox exists; the checkpoint is read and valid, and
	// is restored into the new sandbox.
	useRestore
	// useStale: a sandbox exists, running or stopped; its workdir wins and
	// the checkpoint is deleted once the provision adopted the sandbox.
	useStale
)

// checkpointToRestore decides what a provision of sid does with its stored
// checkpoint, before anything is created or removed. A sandbox that exists,
// even stopped, holds the newest copy of the workdir: a checkpoint is
// written just before its sandbox is removed and deleted once restored, so
// one found beside a sandbox is stale (the reap that took it failed after
// the export, or a restore was done but not deleted) and is never restored
// over it. Only when there is no sandbox is the checkpoint read through and
// checked (Reroot on every member, the tar's framing); an
// unreadable one fails the provision and is kept, with nothing created or
// removed, so the only copy of the data is never lost to a PUT.
func (s *Service) checkpointToRestore(ctx context.Context, sid domain.ID, workdir string) (checkpointUse, error) {
	if s.checkpoints == nil {
		return useNone, nil
	}
	rc, _, err := s.checkpoints.Get(ctx, sid)
	if errors.Is(err, ports.ErrCheckpointNotFound) {
		return useNone, nil
	}
	if err != nil {
		return useNone, fmt.Errorf("provision %s: %w", sid, err)
	}
	defer func() { _ = rc.Close() }()
	exists, err := s.sandboxExists(ctx, sid, workdir)
	switch {
	case err != nil:
		return useNone, fmt.Errorf("provision %s: is there a sandbox beside the checkpoint: %w", sid, err)
	case exists:
		return useStale, nil
	}
	if err := checkCheckpoint(rc); err != nil {
		return useNone, fmt.Errorf("provision %s: the stored checkpoint cannot be restored; it is kept "+
			"(DELETE the session to discard it): %w", sid, err)
	}
	return useRestore, nil
}

// sandboxExists reports whether the session has a sandbox, running or
// stopped. Attach finds a running one; Export, which also reads a stopped
// sandbox, tells a stopped one (even without the workdir) from none.
// Anything else is an error: the provision must not guess.
func (s *Service) sandboxExists(ctx context.Context, sid domain.ID, workdir string) (bool, error) {
	_, err := s.provider.Attach(ctx, sid)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, sandbox.ErrNotFound) {
		return false, err
	}
	rc, err := s.provider.Export(ctx, sid, workdir)
	switch {
	case err == nil:
		_ = rc.Close()
		return true, nil
	case errors.Is(err, sandbox.ErrFileNotExist):
		return true, nil
	case errors.Is(err, sandbox.ErrNotFound):
		return false, nil
	}
	return false, err
}

// checkCheckpoint reads a checkpoint to its end as the restore will: every
// member must re-root under a workdir and every header and body must be
// whole (a truncated or corrupted file is ErrBadCheckpoint).
func checkCheckpoint(r io.Reader) error {
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) && n == 0 {
			// An export holds at least its top directory.
			return fmt.Errorf("%w: no member", ports.ErrBadCheckpoint)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ports.ErrBadCheckpoint, err)
		}
		if _, err := Reroot(sandbox.DefaultWorkdir, h.Name); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return fmt.Errorf("%w: member %.128q: %w", ports.ErrBadCheckpoint, h.Name, err)
		}
	}
}
