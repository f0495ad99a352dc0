package executor

import (
	"sync"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// handles caches each session's sandbox handle, so a call costs no
// Provider.Attach (an inspect round trip on Docker). A cached handle of a
// sandbox someone else reaped or rebuilt answers sandbox.ErrNotFound; the
// service then drops it and attaches again.
type handles struct {
	mu sync.Mutex
	m  map[domain.ID]ports.Sandbox
}

func (h *handles) get(sid domain.ID) ports.Sandbox {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[sid]
}

func (h *handles) put(sid domain.ID, sb ports.Sandbox) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[domain.ID]ports.Sandbox{}
	}
	h.m[sid] = sb
}

// drop forgets sid's handle; with stale set, only if it is still stale (a
// concurrent call may have cached a fresh one).
func (h *handles) drop(sid domain.ID, stale ports.Sandbox) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if stale == nil || h.m[sid] == stale {
		delete(h.m, sid)
	}
}

// prune forgets the handles of sessions keep rejects (gone from the
// endpoint), so the cache does not grow with sessions reaped elsewhere.
func (h *handles) prune(keep func(domain.ID) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sid := range h.m {
		if !keep(sid) {
			delete(h.m, sid)
		}
	}
}
