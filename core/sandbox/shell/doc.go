// Package shell holds the scripts that run inside a sandbox, as the bash and
// perl files they are (lib.sh, bulk.sh, bulk.pl, write.sh, read.sh, meta.sh,
// stage-*.sh, exec-*.sh, sweep.sh), embedded and assembled into the script
// texts that package sandbox puts into an exec's argv. Each file documents
// its functions beside them; package sandbox builds the argv and parses
// what the scripts report.
//
// Comment lines (a line whose first non-blank character is '#', the
// shebang and the shellcheck directives included) are stripped when the
// package loads: the scripts travel in the argv of every exec, so a comment
// would cost bytes on each call, and the Docker and Kubernetes exec APIs
// bound the argv size. A script must therefore never rely on a line that
// starts with '#' (no heredocs, no multi-line strings holding one).
//
// The file scripts (write, read, stage, bulk) report a classified failure by
// an exit code in 80..89, above what their own tools return (1, 2) and below
// bash's 126/127 and the 128+N of a signal, plus one marker line on stderr,
// sandgate-fault:<code>:<member index or ->:<reason> (lib.sh's __sg_fault):
//
//	80  the path does not exist
//	81  the path is a directory (or a symlink to one)
//	82  a component of the parent chain is not a directory
//	83  not a regular file (a symlink, FIFO, socket or device) for a read
//	84  the target cannot be replaced (a device node or a mount point)
//	85  not writable; the marker carries the strerror
//	86  the file is larger than the read allows
//	87  a bulk delivery is incomplete or its bookkeeping malformed
//	88  a write's body was shorter or longer than announced
//	89  the file cannot be opened for reading; the marker carries the strerror
//
// package sandbox defines these codes (ExitFileNotExist …) and maps them to
// its errors.
package shell
