package sandbox

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// WriteMembersAt is WriteMembers with every name relative to base, an
// ancestor directory of every member: the body of a Docker archive PUT whose
// destination is base rather than "/". Docker refuses a PUT into a read-only
// root unless its destination lies in a volume, so the destination has to be
// as deep as the batch allows (the workdir, for a batch under it).
func (b *BulkWrite) WriteMembersAt(w io.Writer, base string) error {
	prefix := strings.TrimSuffix(path.Clean(base), "/") + "/"
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	for _, m := range b.members {
		rel, ok := strings.CutPrefix(m.temp, prefix)
		if !ok {
			return fmt.Errorf("bulk archive: member %s is not under %s", clipText(m.temp, 256), clipText(base, 256))
		}
		if err := writeEntry(tw, "/"+rel, m.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bulk archive: %w", err)
	}
	return bw.Flush()
}
