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
	// PathStage: POST ?path= prepares a staged write of path, whose body
	// travels by another transport (Docker's archive endpoint, faster for a
	// large body than this stream): every fault PathFile's PUT answers
	// before a byte (not_directory, is_directory, not_replaceable,
	// not_writable with the strerror), the parents made 0755, then an empty
	// temporary file created beside path as the sandbox's user; 200 with the
	// temporary's path as text/plain. The caller fills it, then calls
	// PathLand.
	PathStage = "/v1/stage"
	// PathLand: POST ?path=&tmp=&size= lands a staged write: tmp (a
	// temporary name beside path, as PathStage answers) must be a regular
	// file, not a symlink, of exactly size bytes (else size_mismatch); it
	// gets the mode of a regular file at path (else 0644) and is renamed
	// onto it, as PathFile's PUT lands; 204. Any failure removes tmp. With
	// discard=1 it only removes tmp (the transfer failed); 204.
	PathLand = "/v1/land"
	// PathFilesStage: POST a JSON []StagedFile, a WriteFiles batch whose
	// bytes travel by another transport into each member's Tmp (Docker's
	// archive PUT): every member's parent chain is checked (not_directory,
	// before anything is made), its parents made 0755, and each parent
	// checked to let the sandbox's user create files (not_writable with the
	// strerror); no file is created. 204, or Error naming the member.
	PathFilesStage = "/v1/files/stage"
	// PathFilesLand: POST a JSON []StagedFile after the transfer: every Tmp
	// must be a regular file of Size bytes (else short_delivery naming the
	// member, and nothing lands), then each lands like PathFile's PUT, in
	// order; the first failure stops the batch, the temporaries not landed
	// removed. With ?discard=1 it removes every Tmp (the transfer failed);
	// 204.
	PathFilesLand = "/v1/files/land"
)

// Query parameter names of the file routes.
const (
	QueryPath      = "path"
	QueryMax       = "max"
	QueryRecursive = "recursive"
	QueryParents   = "parents"
	QueryTmp       = "tmp"
	QuerySize      = "size"
	QueryDiscard   = "discard"
)
