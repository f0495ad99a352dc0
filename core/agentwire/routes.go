package agentwire

import "path"

// Version names this protocol. The agent serves it at PathVersion; a
// provider that finds another version restarts the agent from its own image.
const Version = "sandgate-agent/1"

// Dir is where the agent's binary is mounted, read-only, in every sandbox;
// Binary is the binary there.
const Dir = "/.sandgate/agent"

// Binary is the agent's path inside a sandbox.
var Binary = path.Join(Dir, "sandgate-agent")

// Argv starts the agent as the main process of its engine exec: it serves
// on its stdin and stdout until stdin ends.
func Argv() []string { return []string{Binary, "serve"} }

// Routes. Each is one HTTP exchange on its own yamux stream.
const (
	// PathVersion: GET, answers Version as text/plain.
	PathVersion = "/v1/version"
	// PathExec: POST an ExecRequest; answers 200 and a stream of ExecEvents.
	PathExec = "/v1/exec"
	// PathFile: GET reads (?path=&max=: 200 with Content-Length the file's
	// exact size, or Error code file_too_large before any byte; max absent
	// is sandbox.MaxFileBytes; HEAD answers the same without the bytes);
	// PUT writes atomically (?path=, Content-Length the size, required:
	// 411 without; 204). A body that ends before Content-Length (the
	// client aborted) is size_mismatch with the target untouched; HTTP
	// cannot carry a longer one, so a client whose source proves longer
	// than announced must abort the request before its last byte.
	PathFile = "/v1/file"
	// PathFiles: PUT an uncompressed tar of regular files (absolute member
	// names); every member is staged first, so a short or broken tar (Error
	// code short_delivery) or a blocked parent lands nothing; then each
	// lands like PathFile's PUT, in order, and the first failure stops the
	// batch (204 or Error naming the member in Path).
	PathFiles = "/v1/files"
	// PathStat: GET ?path= answers a FileInfo (the final symlink not
	// followed).
	PathStat = "/v1/stat"
	// PathList: GET ?path= answers a directory's entries as []FileInfo,
	// sorted by name.
	PathList = "/v1/list"
	// PathRemove: POST ?path=&recursive=1 removes a file, a symlink or a
	// directory (empty unless recursive); 204.
	PathRemove = "/v1/remove"
	// PathMkdir: POST ?path=&parents=1 creates a directory 0755; 204.
	PathMkdir = "/v1/mkdir"
)

// Query parameter names of the file routes.
const (
	QueryPath      = "path"
	QueryMax       = "max"
	QueryRecursive = "recursive"
	QueryParents   = "parents"
)
