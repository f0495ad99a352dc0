package agent

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPumpDeliversWhatThePipeHeldAtTheDrainsEnd: a pump that first reads
// after its drain's deadline has passed (it was not scheduled in time, as
// on a loaded machine) still delivers the bytes the command wrote before
// it ended; only what comes after is dropped.
func TestPumpDeliversWhatThePipeHeldAtTheDrainsEnd(t *testing.T) {
	t.Parallel()
	rd, wr, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = wr.Close() }()
	_, err = wr.Write([]byte("written before the end\n"))
	require.NoError(t, err)

	p := newPump(rd, false)
	p.drain(time.Now()) // the whole drain is already over
	time.Sleep(10 * time.Millisecond)
	out, quit := make(chan chunk), make(chan struct{})
	defer close(quit)
	go p.run(out, quit)

	var got []byte
	for {
		select {
		case c := <-out:
			got = append(got, c.data...)
			continue
		case <-p.stopped:
		}
		break
	}
	require.Equal(t, "written before the end\n", string(got))
	// The writer (a straggler) is not blocked: the pump keeps reading.
	_, err = wr.Write(make([]byte, 256<<10))
	require.NoError(t, err)
}
