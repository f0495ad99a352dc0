package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The daemon's archive endpoint moves large bodies several times faster
// than an exec's stdin or stdout (docs/BENCHMARKS.md): the fallback stages
// large writes and reads through it around its scripts, and the agent's
// data plane around its own checks (agentclient.Archive). It runs as root
// in the daemon, so every caller checks the path as the sandbox's user
// before, and the archive's header after (sandbox.OpenArchived).

// archiveRule says which bodies over the agent go through the archive
// endpoint. The endpoint costs ~200 ms a call whatever the size (the
// daemon mounts the container's root and starts its tar child), the agent's
// stream ~1 ms plus the bytes at its rate, so each crossover is where the
// stream's slower rate has spent those 200 ms. Measured on the agent,
// docs/BENCHMARKS.md's VM, load 7–9, medians (2026-12-03).
//
// One file (ReadFileStream, WriteFileStream), medians of 5: reads cross
// at 8 MiB (the exec stream's stdout is the slow direction), writes near
// 32 MiB.
//
//	body    stream write  archive write  stream read  archive read
//	 4 MiB      55 ms         205 ms          75 ms        209 ms
//	 8 MiB      88 ms         244 ms         262 ms        258 ms
//	16 MiB     182 ms         278 ms         339 ms        273 ms
//	32 MiB     319 ms         330 ms         754 ms        316 ms
//
// WriteFiles (files in directories of 100), medians of 3 to 5: the agent's
// tar stream does per-file work (a few system calls and a scheduler hop a
// file); the archive path does the checks per directory and one rename a
// file, the bytes in the daemon's one extraction. They cross between 1,000
// and 3,000 files, and between 10 and 32 MiB; the fallback (two execs
// around the same PUT) is never the fastest over the agent.
//
//	batch              stream   archive  fallback
//	   300 x 2 KiB      75 ms    407 ms    936 ms
//	 1,000 x 2 KiB     868 ms    940 ms   1.76 s
//	 3,000 x 2 KiB    2.72 s    1.64 s    1.65 s
//	10,000 x 2 KiB    3.13 s    2.81 s    3.36 s
//	    10 x 1 MiB     202 ms    260 ms    567 ms
//	     4 x 8 MiB     585 ms    325 ms    630 ms
var archiveRule = agentclient.ArchiveRule{
	ReadAbove:  8 << 20,
	WriteAbove: 32 << 20,
	BulkFrom:   2000,
	BulkAbove:  16 << 20,
}

// engineArchive is the archive endpoint as a bulk transport: the agent's,
// and the fallback's staged writes'.
type engineArchive struct{ *handle }

var _ agentclient.Archive = engineArchive{}

// Put implements agentclient.Archive.
func (a engineArchive) Put(ctx context.Context, dir string, body io.Reader) error {
	return a.putArchive(ctx, dir, body)
}

// Get implements agentclient.Archive.
func (a engineArchive) Get(ctx context.Context, path string) (io.ReadCloser, error) {
	return a.getArchive(ctx, path)
}

// putArchive extracts the tar body into dir. CopyUIDGID: the daemon
// extracts as the container's user, so a non-root sandbox owns the files it
// receives and can carry a target's mode over and rename them.
func (s *handle) putArchive(ctx context.Context, dir string, body io.Reader) error {
	err := s.p.eng.CopyToContainer(ctx, s.id, dir, body, container.CopyToContainerOptions{CopyUIDGID: true})
	return translate(err, "archive upload")
}

// getArchive answers a tar stream of path (the final symlink not followed:
// the daemon archives the link itself).
func (s *handle) getArchive(ctx context.Context, path string) (io.ReadCloser, error) {
	rc, _, err := s.p.eng.CopyFromContainer(ctx, s.id, path)
	switch {
	case err == nil:
		return rc, nil
	// The caller just saw a regular file: a miss now is a race with the
	// sandbox — gone itself, or the file gone — answered as what it found.
	case cerrdefs.IsNotFound(err) && s.vanished(ctx, time.Time{}):
		return nil, fmt.Errorf("read %q: %w", path, errGone)
	case cerrdefs.IsNotFound(err):
		return nil, fmt.Errorf("read %q: %w", path, sandbox.ErrFileNotExist)
	}
	return nil, translate(err, "archive read")
}
