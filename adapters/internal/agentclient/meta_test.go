package agentclient

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/agentwire"
	"github.com/sandgate/sandgate/core/sandbox"
)

// The meta operations validate before a byte travels, convert the agent's
// documents, sort and bound its listing (the agent is in the sandbox's
// reach), and answer its refusals as the fallback does.
func TestMetaOverTheAgent(t *testing.T) {
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	var seen []string
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		switch p := r.URL.Query().Get(agentwire.QueryPath); {
		case r.URL.Path == agentwire.PathList && p == "/big":
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(agentwire.Error{Code: agentwire.CodeFileTooLarge, Path: p})
		case r.URL.Path == agentwire.PathList:
			_ = json.NewEncoder(w).Encode([]agentwire.FileInfo{
				{Name: "b", Type: agentwire.TypeFile, Mode: 0o100644, ModTime: mtime},
				{Name: "a", Type: agentwire.TypeSymlink, LinkTarget: "b", Mode: 0o777},
			})
		case r.URL.Path == agentwire.PathStat:
			_ = json.NewEncoder(w).Encode(agentwire.FileInfo{Name: p, Type: agentwire.TypeDir, Mode: 0o755, ModTime: mtime})
		case p == "/full":
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(agentwire.Error{Code: agentwire.CodeIsDirectory, Path: p})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	ctx := t.Context()
	fi, err := c.Stat(ctx, "/")
	require.NoError(t, err)
	require.Equal(t, sandbox.FileInfo{Name: "/", Type: sandbox.TypeDir, Mode: 0o755, ModTime: mtime.UTC()}, fi)
	infos, err := c.List(ctx, "/d")
	require.NoError(t, err)
	require.Equal(t, []sandbox.FileInfo{
		{Name: "a", Type: sandbox.TypeSymlink, LinkTarget: "b", Mode: 0o777},
		{Name: "b", Type: sandbox.TypeFile, Mode: 0o644, ModTime: mtime.UTC()},
	}, infos, "sorted, mode bits only")
	_, err = c.List(ctx, "/big")
	require.ErrorIs(t, err, sandbox.ErrTooManyEntries)
	require.NoError(t, c.Remove(ctx, "/x", true))
	require.NoError(t, c.Mkdir(ctx, "/x", false))
	require.ErrorIs(t, c.Remove(ctx, "/full", false), sandbox.ErrIsDirectory)

	require.Error(t, c.Remove(ctx, "/", true))
	_, err = c.Stat(ctx, "rel")
	require.Error(t, err)
	require.Error(t, c.Mkdir(ctx, "/a/../b", true))
	require.Equal(t, []string{
		"GET /v1/stat?path=%2F", "GET /v1/list?path=%2Fd", "GET /v1/list?path=%2Fbig",
		"POST /v1/remove?path=%2Fx&recursive=1", "POST /v1/mkdir?path=%2Fx", "POST /v1/remove?path=%2Ffull",
	}, seen, "nothing invalid travels")
}
