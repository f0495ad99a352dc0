package executor

import (
	"context"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports/portfake"
)

// BenchmarkServiceExec measures what the service adds to one exec on the
// fake sandbox: the id and request checks, the activity count and the
// cached handle (no Provider.Attach; a store write at most every 5 s).
func BenchmarkServiceExec(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	if _, err := e.svc.Provision(ctx, domain.MustParseSessionID("ses_bench"), session.Request{}); err != nil {
		b.Fatal(err)
	}
	req := sandbox.ExecRequest{Command: "true"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.Exec(ctx, domain.MustParseSessionID("ses_bench"), req); err != nil {
			b.Fatal(err)
		}
	}
	if e.prov.Calls(portfake.OpAttach) != 0 {
		b.Fatalf("%d attaches: the handle is not cached", e.prov.Calls(portfake.OpAttach))
	}
}
