package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// apiExecRow: `POST /v1/sessions/{id}/exec` of `true` through the executor's
// HTTP API (client, handler, service, SQLite store) against Sandbox.Exec in
// process on the same sandbox; the target is the overhead, median against
// median, of at most 2 ms.
func apiExecRow(ctx context.Context, e *env) (Row, error) {
	c, done, err := apiOver(ctx, &e.box, e.image)
	if err != nil {
		return Row{}, err
	}
	defer done()
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
