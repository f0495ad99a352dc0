package kubernetes

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sandgate/sandgate/core/sandbox"
)

// errForeign reports a pod holding a session's derived name without the
// ownership label: never adopted, never deleted (C-PROV-5).
var errForeign = errors.New("name is held by a pod sandgate does not own")

// translate maps an API error to the core's vocabulary, once, at the
// boundary: a missing pod is sandbox.ErrNotFound, a cancelled context stays
// the context's error, anything else is wrapped with what was being done.
func translate(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("kubernetes %s: %w", op, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("kubernetes %s: %w", op, sandbox.ErrNotFound)
	}
	return fmt.Errorf("kubernetes %s: %w", op, err)
}
