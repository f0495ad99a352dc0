package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUploads(t *testing.T) {
	t.Parallel()
	files := []FileWrite{
		{Path: "/workspace/a/x", Data: []byte("1")},
		{Path: "/tmp/y", Data: []byte("22")},
		{Path: "/workspace/b/z", Data: []byte("333")},
		{Path: "/opt/q", Data: []byte("4444")},
		{Path: "/srv/r", Data: []byte("55555")},
	}
	plan, err := planBulk("/workspace", files, 0x10)
	require.NoError(t, err)
	ups := plan.Uploads(WritablePaths("/workspace"))
	require.Len(t, ups, 3)
	require.Equal(t, "/workspace", ups[0].Dir)
	require.True(t, ups[1].Dir == "/tmp" || strings.HasPrefix(ups[1].Dir, "/tmp/"), ups[1].Dir)
	require.Equal(t, "/", ups[2].Dir, "members under no writable root go together")

	// Every member travels exactly once, named relative to its upload's Dir.
	seen := map[string]string{}
	for _, u := range ups {
		var buf bytes.Buffer
		require.NoError(t, plan.WriteUpload(&buf, u))
		tr := tar.NewReader(&buf)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			full := path.Join(u.Dir, hdr.Name)
			require.NotContains(t, seen, full)
			seen[full] = string(data)
		}
	}
	require.Len(t, seen, len(files))
	for i, m := range plan.members {
		require.Equal(t, string(files[i].Data), seen[m.temp])
	}

	// One root: one upload, at the deepest directory.
	plan, err = planBulk("/workspace", files[:1], 0x20)
	require.NoError(t, err)
	ups = plan.Uploads(WritablePaths("/workspace"))
	require.Len(t, ups, 1)
	require.Equal(t, path.Dir(plan.members[0].temp), ups[0].Dir)

	require.ErrorContains(t, plan.WriteUpload(io.Discard, Upload{Dir: "/elsewhere", members: []int{0}}), "not below")
}
