package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/sandgate/sandgate/adapters/internal/agentclient"
	"github.com/sandgate/sandgate/core/sandbox"
)

// WriteFiles on the fallback path (C-BULK-1..3): two execs, whatever
// the member count: the prepare exec receives the bookkeeping on stdin and
// makes the directories as the sandbox's user; an archive PUT per writable
// root (one, for a batch under the workdir) extracts every member under its
// temporary name; the rename exec lands them in order. A PUT that fails is followed by the discard exec instead,
// so nothing lands and nothing is left behind.
func (s scripts) WriteFiles(ctx context.Context, files []sandbox.FileWrite) error {
	if len(files) == 0 {
		return nil
	}
	plan, err := sandbox.PlanBulk(s.workdir, files)
	if err != nil {
		return err
	}
	prefix := agentclient.Producer(plan.WritePrefix)
	defer func() { _ = prefix.Close() }()
	code, stderr, err := s.runScript(ctx, plan.PrepareCmd(), prefix, nil)
	if err != nil {
		return fmt.Errorf("bulk write: prepare: %w", err)
	}
	if code != 0 {
		return plan.Classify(code, stderr)
	}
	for _, up := range plan.Uploads(sandbox.WritablePaths(s.workdir)) {
		if err := s.upload(ctx, plan, up); err != nil {
			return s.discard(ctx, plan, err)
		}
	}
	code, stderr, err = s.runScript(ctx, plan.RenameCmd(), nil, nil)
	if err != nil {
		return fmt.Errorf("bulk write: rename: %w", err)
	}
	return plan.Classify(code, stderr)
}

// upload PUTs one group of members.
func (s *handle) upload(ctx context.Context, plan *sandbox.BulkWrite, up sandbox.Upload) error {
	body := agentclient.Producer(func(w io.Writer) error { return plan.WriteUpload(w, up) })
	defer func() { _ = body.Close() }()
	return s.putArchive(ctx, up.Dir, body)
}

// discard runs the recovery pass after a failed delivery, on a context that
// survives the caller's cancellation so the temporary files do not outlive
// it. The recovery's classification (a blocked parent, else a short
// delivery) is joined with the delivery's own error.
func (s *handle) discard(ctx context.Context, plan *sandbox.BulkWrite, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.opts.RemoveTimeout)
	defer cancel()
	code, stderr, err := s.runScript(ctx, plan.DiscardCmd(), nil, nil)
	if err != nil {
		return fmt.Errorf("bulk write: %w (and the discard pass failed: %w)", cause, err)
	}
	return fmt.Errorf("bulk write: %w: %w", plan.Classify(code, stderr), cause)
}
