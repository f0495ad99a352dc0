package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sinkLog records what an OutputSink is handed, as "stream@offset:data".
type sinkLog []string

func (l *sinkLog) Output(stream Stream, offset int64, data []byte) {
	*l = append(*l, fmt.Sprintf("%s@%d:%s", stream, offset, data))
}

// TestExecCapturesFeedTheSink: each stream's kept pieces reach the sink at
// their offsets, a piece cut by the cap is sent cut, and nothing past the
// cap (nor an empty write) is sent.
func TestExecCapturesFeedTheSink(t *testing.T) {
	t.Parallel()
	var log sinkLog
	stdout, stderr := NewExecCaptures(ExecRequest{Output: &log})
	_, _ = stdout.Write([]byte("ab"))
	_, _ = stderr.Write([]byte("E"))
	_, _ = stdout.Write(nil)
	_, _ = stdout.Write([]byte("cd"))
	big := strings.Repeat("x", MaxOutputBytes)
	_, _ = stderr.Write([]byte(big))
	_, _ = stderr.Write([]byte("dropped"))
	require.Equal(t, []string{"stdout@0:ab", "stderr@0:E", "stdout@2:cd", "stderr@1:" + big[:MaxOutputBytes-1]}, []string(log))
	require.True(t, stderr.Truncated())
	require.Equal(t, "abcd", stdout.String())
}

// TestExecCapturesWithoutSink: an exec that is not streamed keeps its
// output as before.
func TestExecCapturesWithoutSink(t *testing.T) {
	t.Parallel()
	stdout, stderr := NewExecCaptures(ExecRequest{})
	_, _ = stdout.Write([]byte("out"))
	require.Equal(t, "out", stdout.String())
	require.Empty(t, stderr.String())
}
