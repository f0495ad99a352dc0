package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// writeFilesArchived is WriteFiles with the members' bytes through the
// archive: the agent checks every parent and makes the missing ones as the
// sandbox's user (PathFilesStage), one archive PUT per sandbox.Upload puts
// every member under its temporary name, and the agent checks what arrived
// and lands it in order (PathFilesLand). A failed PUT discards every
// temporary (on a context that outlives the caller's): nothing lands.
func (p Plane) writeFilesArchived(ctx context.Context, c *Conn, files []sandbox.FileWrite) error {
	plan, err := sandbox.PlanBulk(p.BulkRoot, files)
	if err != nil || plan == nil {
		return err
	}
	staged := make([]agentwire.StagedFile, len(files))
	for i, tmp := range plan.Temps() {
		staged[i] = agentwire.StagedFile{Path: files[i].Path, Tmp: tmp, Size: int64(len(files[i].Data))}
	}
	if err := c.postStaged(ctx, agentwire.PathFilesStage, nil, staged); err != nil {
		return err
	}
	for _, up := range plan.Uploads(sandbox.WritablePaths(p.BulkRoot)) {
		err := putEnded(ctx, p.Archive, up.Dir, func(w io.Writer) error { return plan.WriteUpload(w, up) })
		if err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
			defer cancel()
			_ = c.postStaged(dctx, agentwire.PathFilesLand, neturl.Values{agentwire.QueryDiscard: {"1"}}, staged)
			return fmt.Errorf("write files: %w: %w", sandbox.ErrShortDelivery, err)
		}
	}
	return c.postStaged(ctx, agentwire.PathFilesLand, nil, staged)
}

// postStaged posts a staged batch to route.
func (c *Conn) postStaged(ctx context.Context, route string, q neturl.Values, staged []agentwire.StagedFile) error {
	body, err := json.Marshal(staged)
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	resp, err := c.send(ctx, http.MethodPost, route, q, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	return resp.Body.Close()
}
