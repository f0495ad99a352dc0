package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
)

func TestChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		wantErr error // nil = valid
		want    string
	}{
		{"path ok", CheckPath("path", "/a/b"), nil, ""},
		{"path relative", CheckPath("path", "a/b"), ErrInvalidRequest, `path: path "a/b": not absolute`},
		{"path unclean", CheckPath("path", "/a/../b"), ErrInvalidRequest, "not clean"},
		{"path empty", CheckPath("path", ""), ErrInvalidRequest, "path: path: empty"},
		{"path root is a directory", CheckPath("path", "/"), sandbox.ErrIsDirectory, "path: path \"/\""},
		{"meta root ok", CheckMetaPath("path", "/"), nil, ""},
		{"meta relative", CheckMetaPath("path", "a"), ErrInvalidRequest, `path: path "a": not absolute`},
		{"remove ok", CheckRemovePath("path", "/a"), nil, ""},
		{"remove root refused", CheckRemovePath("path", "/"), ErrInvalidRequest, "refusing to remove the root"},
		{"root ok", CheckExportRoot("/workspace"), nil, ""},
		{"root /", CheckExportRoot("/"), ErrInvalidRequest, `root "/": must be`},
		{"root empty", CheckExportRoot(""), ErrInvalidRequest, `root "": must be`},
		{"root relative", CheckExportRoot("w"), ErrInvalidRequest, `root "w"`},
		{"root NUL", CheckExportRoot("/a\x00"), ErrInvalidRequest, "root"},
		{"batch ok", CheckBatch([]sandbox.FileWrite{{Path: "/a"}, {Path: "/b/c"}}), nil, ""},
		{"batch bad member", CheckBatch([]sandbox.FileWrite{{Path: "/a"}, {Path: "b"}}), ErrInvalidRequest, "files[1].path"},
		{"exec ok", CheckExec(sandbox.ExecRequest{Command: "true", Timeout: time.Second}), nil, ""},
		{"exec negative timeout", CheckExec(sandbox.ExecRequest{Timeout: -1}), sandbox.ErrInvalidExec, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.wantErr == nil {
				require.NoError(t, tc.err)
				return
			}
			require.ErrorIs(t, tc.err, tc.wantErr)
			require.ErrorContains(t, tc.err, tc.want)
		})
	}
	require.ErrorIs(t, CheckExec(sandbox.ExecRequest{Command: "a\x00"}), ErrInvalidRequest)
}
