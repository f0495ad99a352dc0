package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandgate/sandgate/core/sandbox"
)

// errForeign reports a container holding a session's derived name without
// the ownership label: never adopted, never removed (C-PROV-5).
var errForeign = errors.New("name is held by a container sandgate does not own")

// translate maps an SDK error to the core's vocabulary, once, at the
// boundary: a missing container is sandbox.ErrNotFound, a cancelled context
// stays the context's error, anything else is wrapped with what was being
// done.
func translate(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("docker %s: %w", op, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker %s: %w", op, sandbox.ErrNotFound)
	}
	return fmt.Errorf("docker %s: %w", op, err)
}
