package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/core/domain"
)

// call names what a failed API call was about, so its error can say what to
// do next.
type call struct {
	url  string
	sid  domain.ID
	path string
}

// explain turns an API call's error into one line for people: every API
// error code has its own advice, and an unreachable server says how to point
// the CLI elsewhere. The server's message carries no secret (httpapi).
func (c call) explain(err error) error {
	var ae *httpapi.APIError
	if errors.As(err, &ae) {
		return errors.New(c.explainAPI(ae))
	}
	// Only a failed dial means the server is not there; a connection that
	// breaks later is reported as it is.
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("cannot reach the executor at %s (is `executor serve` running? set $%s or --url): %w", c.url, EnvURL, err)
	}
	return err
}

// advice is the message of every API error code: {sid}, {path}, {url},
// {msg} (the server's message) and {status} are filled in.
var advice = map[string]string{
	httpapi.CodeNotFound:             "session {sid} not found (create it with `executor create {sid}`)",
	httpapi.CodeSpecMismatch:         "session {sid} already runs with another image, workdir or network (remove it with `executor rm {sid}`, or create it with the same settings)",
	httpapi.CodeFileNotExist:         "{path}: no such file or directory in session {sid}",
	httpapi.CodeIsDirectory:          "{path} is a directory in session {sid} (cp copies one file; `executor export {sid} --root DIR` copies a tree)",
	httpapi.CodeNotDirectory:         "{path}: a parent of it is not a directory in session {sid}",
	httpapi.CodeNotRegularFile:       "{path} is not a regular file in session {sid} (a device, socket, fifo or symlink)",
	httpapi.CodeNotReplaceable:       "{path} cannot be replaced in session {sid} (a directory or a mount point is in the way)",
	httpapi.CodeNotWritable:          "{path} is not writable in session {sid} (read-only location or permissions)",
	httpapi.CodeFileTooLarge:         "{path} is larger than the executor's transfer limit: {msg}",
	httpapi.CodeInvalidArgument:      "the executor refused the request: {msg}",
	httpapi.CodeLengthRequired:       "the executor needs the upload's size up front: {msg}",
	httpapi.CodeNotImplemented:       "this executor does not do that yet: {msg}",
	httpapi.CodeCheckpointTooLarge:   "session {sid} was not removed: its workdir is too large to checkpoint ({msg}); remove it without --checkpoint, or raise SANDGATE_CHECKPOINT_MAX_BYTES",
	httpapi.CodeCheckpointUnreadable: "session {sid} was not created: its stored checkpoint cannot be restored and was kept ({msg}); `executor rm {sid}` discards it",
	httpapi.CodeUnauthorized:         "unauthorized by the executor at {url}: set $" + EnvToken + " (or --token) to its API token",
	httpapi.CodeMethodNotAllowed:     "the server at {url} does not speak this version of the executor API ({msg})",
	httpapi.CodeInternal:             "the executor failed (HTTP {status}); its log has the cause",
}

func (c call) explainAPI(ae *httpapi.APIError) string {
	tmpl, ok := advice[ae.Code]
	if !ok {
		tmpl = "the executor answered HTTP {status} {code}: {msg}"
	}
	return strings.NewReplacer("{sid}", c.sid.String(), "{path}", c.path, "{url}", c.url, "{msg}", ae.Message,
		"{status}", strconv.Itoa(ae.Status), "{code}", ae.Code).Replace(tmpl)
}
