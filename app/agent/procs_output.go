package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// maxChunk bounds one ProcChunk's data: what a reader holds at a time.
const maxChunk = 32 << 10

// outputQuery is PathProcOutput's parameters.
type outputQuery struct {
	streams []int // indexes into proc.outs
	from    int64
	follow  bool
}

func parseOutputQuery(r *http.Request) (outputQuery, error) {
	q := outputQuery{streams: []int{0, 1}}
	switch v := r.URL.Query().Get(agentwire.QueryStream); v {
	case "":
	case sandbox.StreamStdout:
		q.streams = []int{0}
	case sandbox.StreamStderr:
		q.streams = []int{1}
	default:
		return q, fmt.Errorf("stream %q: not stdout or stderr: %w", v, errInvalid)
	}
	if v := r.URL.Query().Get(agentwire.QueryFrom); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return q, fmt.Errorf("from %q: not an offset: %w", v, errInvalid)
		}
		q.from = n
	}
	var err error
	q.follow, err = flag(r, agentwire.QueryFollow)
	return q, err
}

var streamNames = [2]string{sandbox.StreamStdout, sandbox.StreamStderr}

// procOutput answers the proc's output as NDJSON ProcChunks from each
// stream's offset q.from, then the EOF line. Without follow it ends at what
// the rings held when the request came; with follow it ends once the proc
// is drained (or removed) and every byte before that was sent. Only the
// reader's offsets and one chunk are held per reader: a slow one falls
// behind in the ring (and is told what it lost), it never holds the proc.
func procOutput(w http.ResponseWriter, r *http.Request, p *proc) {
	q, err := parseOutputQuery(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, r, fmt.Errorf("the response cannot be streamed"))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl.Flush() // the caller sees the answer begin before any output
	enc := json.NewEncoder(w)
	var cur, stop [2]int64
	for _, i := range q.streams {
		cur[i], stop[i] = q.from, p.outs[i].total()
	}
	for r.Context().Err() == nil {
		// Taken before the reads: output that came before the end is read.
		ended := closed(p.drained) || closed(p.removed)
		sent := false
		var wake [2]<-chan struct{}
		for _, i := range q.streams {
			if !q.follow && cur[i] >= stop[i] {
				continue
			}
			s, changed := p.outs[i].read(cur[i], maxChunk)
			wake[i] = changed
			if len(s.data) == 0 {
				continue
			}
			if !q.follow && s.offset+int64(len(s.data)) > stop[i] {
				s.data = s.data[:max(stop[i]-s.offset, 0)]
				if len(s.data) == 0 { // overwritten past the request's end
					cur[i] = stop[i]
					continue
				}
			}
			_ = enc.Encode(agentwire.ProcChunk{Stream: streamNames[i], Offset: s.offset, Data: s.data, Dropped: s.dropped})
			cur[i] = s.offset + int64(len(s.data))
			sent = true
		}
		if sent {
			fl.Flush()
			continue
		}
		if !q.follow || ended {
			break
		}
		select {
		case <-wake[0]:
		case <-wake[1]:
		case <-p.drained:
		case <-p.removed:
		case <-r.Context().Done():
		}
	}
	if r.Context().Err() == nil {
		info := p.info()
		_ = enc.Encode(agentwire.ProcChunk{EOF: true, Exit: &info})
		fl.Flush()
	}
}
