package porttest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

// execStreamRows: a streamed exec (C-EXEC-6, CONTRACT §5; extends the
// seed) delivers its output while the command runs, and exactly the bytes
// of the result.
func execStreamRows() []row {
	return []row{
		{"C-EXEC-6/streamed-live-and-exact", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			rec := &recorder{}
			res := exec(t, sb, sandbox.ExecRequest{
				Command: `printf one; sleep 2; printf 'two\n' >&2; printf '\000\377three'; exit 4`,
				Timeout: 30 * time.Second, Output: rec,
			})
			returned := time.Now()
			require.Equal(t, 4, res.ExitCode, res.Stderr)
			require.Equal(t, "one\x00\xffthree", res.Stdout)
			require.Equal(t, "two\n", res.Stderr)
			rec.requireExact(t, res)
			early := returned.Sub(rec.firstAt(t, sandbox.Stdout))
			require.Greater(t, early, time.Second,
				"the first piece arrived only %v before the call returned (the command slept 2 s after it): not live", early)
		}},
		{"C-EXEC-6/streamed-capped-like-the-result", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			rec := &recorder{}
			res := exec(t, sb, sandbox.ExecRequest{
				Command: fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo err >&2`, 3*sandbox.MaxOutputBytes),
				Timeout: 60 * time.Second, Output: rec,
			})
			require.True(t, res.Truncated)
			require.Len(t, res.Stdout, sandbox.MaxOutputBytes)
			rec.requireExact(t, res)
		}},
		{"C-EXEC-6/streamed-deadline", func(t *testing.T, s *suite) {
			sb := s.fresh(t)
			rec := &recorder{}
			res, took := timed(t, sb, sandbox.ExecRequest{Command: "echo started; sleep 30", Timeout: outputDeadline, Output: rec})
			require.True(t, res.TimedOut)
			requireReturnedBy(t, took, outputDeadline)
			require.Equal(t, "started\n", res.Stdout)
			rec.requireExact(t, res)
		}},
	}
}

// recorder is an OutputSink that keeps every piece with its arrival time.
type recorder struct {
	mu     sync.Mutex
	pieces []piece
}

type piece struct {
	stream sandbox.Stream
	offset int64
	data   string
	at     time.Time
}

func (r *recorder) Output(stream sandbox.Stream, offset int64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pieces = append(r.pieces, piece{stream, offset, string(data), time.Now()})
}

// requireExact: each stream's pieces are contiguous from offset 0 and
// concatenate to the result's bytes.
func (r *recorder) requireExact(t *testing.T, res sandbox.ExecResult) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for stream, want := range map[sandbox.Stream]string{sandbox.Stdout: res.Stdout, sandbox.Stderr: res.Stderr} {
		var got strings.Builder
		for _, p := range r.pieces {
			if p.stream != stream {
				continue
			}
			require.Equal(t, int64(got.Len()), p.offset, "%s: a piece out of place", stream)
			require.NotEmpty(t, p.data, "%s: an empty piece", stream)
			got.WriteString(p.data)
		}
		require.Equal(t, want, got.String(), "%s: the pieces are not the result's bytes", stream)
	}
}

// firstAt is when the first piece of stream arrived; it fails the row if
// none did.
func (r *recorder) firstAt(t *testing.T, stream sandbox.Stream) time.Time {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pieces {
		if p.stream == stream {
			return p.at
		}
	}
	require.FailNow(t, "no piece of "+string(stream))
	return time.Time{}
}
