package executor

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports"
)

// Reroot maps a member of a workdir checkpoint onto workdir. An export's
// members live under one directory, path.Base of the exported root
// (Provider.Export); that first element is replaced by workdir, so a
// checkpoint restores into the new provision's workdir even when it names
// another one. The top directory itself maps to workdir. A name that is
// absolute, holds "..", or a NUL byte is ports.ErrBadCheckpoint.
func Reroot(workdir, name string) (string, error) {
	clean := path.Clean(strings.TrimSuffix(name, "/"))
	if name == "" || path.IsAbs(name) || strings.IndexByte(name, 0) >= 0 || clean == ".." ||
		strings.HasPrefix(clean, "../") || clean == "." || hasDotDot(name) {
		return "", fmt.Errorf("%w: member %q: must be a relative name under the workdir's directory", ports.ErrBadCheckpoint, domain.Clip(name))
	}
	_, rest, _ := strings.Cut(clean, "/")
	if rest == "" {
		return workdir, nil
	}
	return path.Join(workdir, rest), nil
}

func hasDotDot(name string) bool {
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

// RestoreKind is what a checkpoint member becomes in the sandbox.
type RestoreKind int

const (
	// RestoreDir: a directory (created, even when empty).
	RestoreDir RestoreKind = iota
	// RestoreFile: a regular file; its bytes travel through Sandbox writes.
	RestoreFile
	// RestoreSymlink: a symbolic link to Target (never followed here).
	RestoreSymlink
)

// RestoreEntry is one member of a checkpoint, already rerooted.
type RestoreEntry struct {
	Kind   RestoreKind
	Path   string
	Mode   fs.FileMode // permission bits
	Target string      // RestoreSymlink only
}

// restoreScriptBytes keeps each script well below sandbox.MaxCommandBytes.
const restoreScriptBytes = sandbox.MaxCommandBytes / 2

// RestoreScripts returns the shell commands that finish a restore once the
// files' bytes are written (Sandbox writes create files 0644 and parents
// 0755): create every directory, empty ones too, create symbolic links, then
// give files and directories their recorded permissions — directories last
// and deepest first, so a directory without write or search permission does
// not block what lies under it. Each command stops at its first failure
// (set -e) and stays under restoreScriptBytes.
func RestoreScripts(entries []RestoreEntry) []string {
	var lines []string
	var dirs []RestoreEntry
	for _, e := range entries {
		if e.Kind == RestoreDir {
			lines = append(lines, "mkdir -p -- "+sandbox.ShellQuote(e.Path))
		}
	}
	for _, e := range entries {
		if e.Kind == RestoreSymlink {
			lines = append(lines, "ln -sfn -- "+sandbox.ShellQuote(e.Target)+" "+sandbox.ShellQuote(e.Path))
		}
	}
	for _, e := range entries {
		switch {
		case e.Kind == RestoreFile && e.Mode.Perm() != 0o644:
			lines = append(lines, fmt.Sprintf("chmod %04o -- %s", e.Mode.Perm(), sandbox.ShellQuote(e.Path)))
		case e.Kind == RestoreDir && e.Mode.Perm() != 0o755:
			dirs = append(dirs, e)
		}
	}
	slices.SortStableFunc(dirs, func(a, b RestoreEntry) int {
		return strings.Count(b.Path, "/") - strings.Count(a.Path, "/")
	})
	for _, e := range dirs {
		lines = append(lines, fmt.Sprintf("chmod %04o -- %s", e.Mode.Perm(), sandbox.ShellQuote(e.Path)))
	}
	var out []string
	var b strings.Builder
	for _, l := range lines {
		if b.Len() > 0 && b.Len()+len(l)+1 > restoreScriptBytes {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString("set -e")
		}
		b.WriteString("\n" + l)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
