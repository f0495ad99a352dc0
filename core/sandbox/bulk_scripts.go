package sandbox

import "github.com/sandgate/sandgate/core/sandbox/shell"

// The bulk write's execs run the scripts of package shell, whose files
// (bulk.sh, bulk-*.sh) document every step, with BulkWrite.argv's arguments.
// The flow on Docker is PrepareCmd (stdin: WritePrefix) → one archive PUT
// per Uploads group (body: WriteUpload) → RenameCmd, or DiscardCmd when a
// PUT failed. On Kubernetes it is OneShotCmd alone (stdin: WriteArchive).

// PrepareCmd is Docker's first exec, before the archive PUT, with
// WritePrefix's bytes on stdin: it unpacks the bookkeeping and makes every
// missing parent directory, refusing a blocked parent (ExitNotDirectory) or
// a directory the sandbox's user cannot write to (ExitNotWritable) before
// any member travels. A failure removes the bookkeeping.
func (b *BulkWrite) PrepareCmd() []string { return b.argv(shell.BulkPrepare) }

// RenameCmd is Docker's second exec, after every Uploads group was PUT: it
// checks that every temporary file arrived (ExitShortDelivery otherwise,
// landing nothing), then lands the members in order. The first failure
// (ExitIsDirectory, ExitNotWritable …) stops the run and names its member;
// the members landed before it stay landed.
func (b *BulkWrite) RenameCmd() []string { return b.argv(shell.BulkRename) }

// DiscardCmd recovers from a delivery that failed: it removes every
// temporary file and the bookkeeping, and always fails: ExitNotDirectory
// naming the member whose parent chain is blocked, if one is, else
// ExitShortDelivery.
func (b *BulkWrite) DiscardCmd() []string { return b.argv(shell.BulkDiscard) }

// OneShotCmd is the whole batch in one exec (Kubernetes), with
// WriteArchive's bytes on stdin: PrepareCmd, the extraction of the members
// and RenameCmd in one. It may exit before reading all of stdin; its exit
// code is the verdict.
func (b *BulkWrite) OneShotCmd() []string { return b.argv(shell.BulkOneShot) }
