package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
)

// The agent's own cost, outside any engine: what an exec or a small write
// adds on top of the engine's stream (`go test -bench . ./cmd/agent/`).

func BenchmarkExecTrue(b *testing.B) {
	a := startAgent(b, nil)
	for b.Loop() {
		_, _, _, exit := collect(b, a.exec(b, context.Background(), agentwire.ExecRequest{Command: "true", DeadlineSeconds: 60}))
		require.Equal(b, 0, exit.Code)
	}
}

func BenchmarkWriteSmall(b *testing.B) {
	a := startAgent(b, nil)
	p := filepath.Join(b.TempDir(), "small")
	for b.Loop() {
		resp := a.do(b, context.Background(), http.MethodPut, agentwire.PathFile, pathQ(p), strings.NewReader("hello"))
		require.NoError(b, resp.Body.Close())
		require.Equal(b, http.StatusNoContent, resp.StatusCode)
	}
}
