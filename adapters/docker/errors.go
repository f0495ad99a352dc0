package docker

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/sandgate/sandgate/core/sandbox"
)

// errForeign reports a container holding a session's derived name without
// the ownership label: never adopted, never removed (C-PROV-5).
var errForeign = errors.New("name is held by a container sandgate does not own")

// translate maps an SDK error to the core's vocabulary, once, at the
// boundary: a missing container is sandbox.ErrNotFound, a cancelled context
// stays the context's error, anything else is wrapped with what was being
// done, its text rid of the daemon's host paths (scrubHostPaths).
func translate(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("docker %s: %w", op, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker %s: %w", op, sandbox.ErrNotFound)
	}
	return fmt.Errorf("docker %s: %w", op, scrubbed{err})
}

// hostRoot matches the host's path to a container's root filesystem as the
// daemon names it in its messages ("lstat /var/lib/docker/overlay2/<id>/
// merged/etc/x: not a directory"), and daemonRoot any other path under the
// daemon's default data root.
var (
	hostRoot   = regexp.MustCompile(`/[^\s:"']*/(?:merged|rootfs)(?:/|\b)`)
	daemonRoot = regexp.MustCompile(`/var/lib/docker(?:/[^\s:"']*)?`)
)

// scrubHostPaths rewrites a daemon message so that it names paths as the
// sandbox sees them and never the host's: a container root becomes "/",
// anything else under the daemon's data root "<docker-data>". The message
// reaches the executor's log and, for classified errors, the API caller;
// neither learns the host's layout from it.
func scrubHostPaths(msg string) string {
	msg = hostRoot.ReplaceAllString(msg, "/")
	return daemonRoot.ReplaceAllString(msg, "<docker-data>")
}

// scrubbed is an SDK error whose text is scrubHostPaths'd; errors.Is and
// errors.As still see the original (its errdefs class).
type scrubbed struct{ err error }

func (e scrubbed) Error() string { return scrubHostPaths(e.err.Error()) }
func (e scrubbed) Unwrap() error { return e.err }
