package sandbox

// Fixed names and limits of CONTRACT §0. Every backend and the executor use
// these, so a name never drifts between the part that creates a thing and
// the part that finds it again.
const (
	// DefaultWorkdir is where commands run when Spec.Workdir is empty. It is
	// resolved before any adoption comparison.
	DefaultWorkdir = "/workspace"
	// MaxOutputBytes is kept per stream (stdout, stderr) of one exec.
	MaxOutputBytes = 1 << 20
	// MaxFileBytes is the ReadFile cap; a file of exactly this size reads whole.
	MaxFileBytes = 4 << 20
	// TempPrefix starts the base name of every temporary write file.
	TempPrefix = ".sandgate-write-"
	// LabelSession is the ownership label carried by every container, pod and
	// gate, with the session id verbatim as its value.
	LabelSession = "dev.sandgate.session"
)
