package shell

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.sh *.pl
var files embed.FS

// The assembled scripts. A file script is Lib, a blank line and its own
// file; a bulk script adds BulkLib between the two.
var (
	// Lib is lib.sh: the function library of every file script.
	Lib = load("lib.sh")
	// BulkLib is bulk.sh with bulk.pl spliced in: the bulk-write library.
	BulkLib = splice(load("bulk.sh"), "@BULK_PL@", BulkPerl)
	// BulkPerl is bulk.pl, the bulk land step's fast path.
	BulkPerl = load("bulk.pl")

	// Write is the single write (write.sh).
	Write = fileScript("write.sh")
	// Read is the read (read.sh).
	Read = fileScript("read.sh")
	// Meta is stat, list, remove and mkdir (meta.sh).
	Meta = fileScript("meta.sh")
	// StagePrepare, StageLand and StageDiscard are a staged write's three
	// steps (stage-*.sh). StageDiscard needs no library.
	StagePrepare = fileScript("stage-prepare.sh")
	StageLand    = fileScript("stage-land.sh")
	StageDiscard = oneLine("stage-discard.sh")

	// BulkPrepare, BulkRename, BulkDiscard and BulkOneShot are the bulk
	// write's scripts (bulk-*.sh).
	BulkPrepare = bulkScript("bulk-prepare.sh")
	BulkRename  = bulkScript("bulk-rename.sh")
	BulkDiscard = bulkScript("bulk-discard.sh")
	BulkOneShot = bulkScript("bulk-oneshot.sh")

	// ExecWrapper runs every command (exec-wrapper.sh).
	ExecWrapper = load("exec-wrapper.sh")
	// KillGroup SIGKILLs a wrapper's process group (exec-kill-group.sh).
	KillGroup = oneLine("exec-kill-group.sh")
	// GroupProbe tells whether a process group has a live member
	// (exec-group-probe.sh).
	GroupProbe = load("exec-group-probe.sh")

	// Sweep removes the stale temporaries of interrupted writes (sweep.sh).
	Sweep = load("sweep.sh")
)

// load returns the embedded file name without its comment lines (see the
// package doc for why). A missing file is a build mistake, so it panics
// when the package loads, which every test of the module notices.
func load(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("shell: %v", err))
	}
	return stripComments(string(b))
}

// stripComments drops every line whose first non-blank character is '#'.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(strings.TrimLeft(line, " \t"), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// oneLine is load for the one-line scripts, which have always shipped
// without a final newline: it keeps their bytes what they were.
func oneLine(name string) string {
	return strings.TrimSuffix(load(name), "\n")
}

// fileScript is a file script: Lib, a blank line, then the file.
func fileScript(name string) string {
	return Lib + "\n" + load(name)
}

// bulkScript is a bulk script: Lib, a blank line, BulkLib, then the file.
func bulkScript(name string) string {
	return Lib + "\n" + BulkLib + load(name)
}

// splice replaces the one placeholder in s with text.
func splice(s, placeholder, text string) string {
	if strings.Count(s, placeholder) != 1 {
		panic(fmt.Sprintf("shell: want one %s", placeholder))
	}
	return strings.Replace(s, placeholder, text, 1)
}
