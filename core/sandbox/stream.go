package sandbox

// Stream names one of a command's output streams.
type Stream string

// The output streams of an exec.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// OutputSink receives a streamed exec's output while the command runs
// (ExecRequest.Output). It sees exactly the bytes the result keeps, in
// order: each call carries the next piece of one stream at its byte offset
// in that stream, so the pieces of a stream concatenate to the result's
// Stdout (or Stderr) and nothing past MaxOutputBytes is ever sent. The two
// streams may be delivered concurrently, each from one goroutine; data is
// valid only during the call.
//
// Output may block: that holds the command's output back (its pipe fills
// and the command waits), which is how a slow reader gets back-pressure
// instead of growing a buffer. It must return soon after the exec's context
// is done, because the exec returns only once its streams are drained.
type OutputSink interface {
	Output(stream Stream, offset int64, data []byte)
}

// NewExecCaptures returns the two captures of an exec (MaxOutputBytes each),
// feeding req.Output when the exec is streamed: every backend's Exec keeps
// its output through them, so a streamed exec's pieces are the result's
// bytes whatever the path.
func NewExecCaptures(req ExecRequest) (stdout, stderr *Capture) {
	stdout, stderr = NewCapture(MaxOutputBytes), NewCapture(MaxOutputBytes)
	if req.Output != nil {
		stdout.sink, stdout.stream = req.Output, Stdout
		stderr.sink, stderr.stream = req.Output, Stderr
	}
	return stdout, stderr
}
