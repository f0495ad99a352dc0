package sandbox

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
)

// Upload is one Docker archive PUT of a batch: some of its members, to be
// extracted at Dir.
type Upload struct {
	Dir     string
	members []int
}

// Uploads partitions the batch for Docker's archive endpoint, which refuses
// a PUT whose destination lies on a read-only root filesystem even when every
// entry would land in a writable volume. Members under one of roots (the
// sandbox's WritablePaths, which are the volumes of a read-only root) travel
// in one upload per root, at the deepest directory holding them; the others
// travel in one more upload at theirs. A batch under a single root — the
// usual batch under the workdir — is one upload.
func (b *BulkWrite) Uploads(roots []string) []Upload {
	var ups []Upload
	index := map[string]int{} // root (or "") → position in ups
	for i, m := range b.members {
		dir := path.Dir(m.temp)
		root := ""
		for _, r := range roots {
			if dir == r || strings.HasPrefix(dir, strings.TrimSuffix(r, "/")+"/") {
				root = r
				break
			}
		}
		k, ok := index[root]
		if !ok {
			k = len(ups)
			index[root] = k
			ups = append(ups, Upload{Dir: dir})
		}
		ups[k].Dir = commonDir(ups[k].Dir, dir)
		ups[k].members = append(ups[k].members, i)
	}
	return ups
}

// commonDir is the deepest directory holding both a and b.
func commonDir(a, b string) string {
	for a != "/" && b != a && !strings.HasPrefix(b, a+"/") {
		a = path.Dir(a)
	}
	return a
}

// WriteUpload writes u's members, named relative to u.Dir, and the
// end-of-archive blocks: the body of u's PUT.
func (b *BulkWrite) WriteUpload(w io.Writer, u Upload) error {
	strip := strings.TrimRight(u.Dir, "/") + "/"
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	for _, i := range u.members {
		m := b.members[i]
		if !strings.HasPrefix(m.temp, strip) {
			return fmt.Errorf("bulk archive: %s is not below %q", domain.ClipTo(m.temp, 256), domain.ClipTo(u.Dir, 256))
		}
		if err := b.writeEntry(tw, m.temp, strip, m.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bulk archive: %w", err)
	}
	return bw.Flush()
}
