package sandbox

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/domain"
)

// bulkEpoch is the entries' mtime in a plan made by planBulk (the golden
// tests), so the archive's bytes depend on the plan alone.
var bulkEpoch = time.Unix(0, 0)

// WriteArchive writes the batch as one uncompressed tar for extraction at "/"
// (names are the absolute paths without their leading "/"): the manifest and
// the dir list first, then every member at its temporary path. It is the
// stdin of OneShotCmd. Every entry is a regular file, mode 0644, uid and gid
// 0, mtime the time PlanBulk was called (whole seconds), in GNU format (long and non-UTF-8 names travel
// verbatim); there are no directory entries, because the prepare step makes
// the directories as the sandbox's user. The bytes are reproducible, and
// member data is streamed from the plan's slices, never copied whole.
//
// WriteArchive is exactly WritePrefix followed by WriteMembers.
func (b *BulkWrite) WriteArchive(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	if err := b.writeBookkeeping(tw); err != nil {
		return err
	}
	return b.finish(tw, bw, "/")
}

// WritePrefix writes the archive's first PrefixLen bytes: the manifest and
// dir list entries, without the end-of-archive blocks. It is the stdin of
// PrepareCmd, which unpacks the bookkeeping before the members travel.
func (b *BulkWrite) WritePrefix(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	if err := b.writeBookkeeping(tw); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("bulk archive: %w", err)
	}
	return bw.Flush()
}

// WriteMembers writes the rest of the archive after the prefix: every member
// and the end-of-archive blocks — a complete tar on its own, for extraction
// at "/" (Docker PUTs the members per upload group instead: Uploads).
func (b *BulkWrite) WriteMembers(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	return b.finish(tar.NewWriter(bw), bw, "/")
}

// PrefixLen is the byte length of WritePrefix's output.
func (b *BulkWrite) PrefixLen() int64 { return b.prefixLen }

// writeBookkeeping writes the manifest and dir list entries.
func (b *BulkWrite) writeBookkeeping(tw *tar.Writer) error {
	if err := b.writeEntry(tw, b.Manifest, "/", b.manifest); err != nil {
		return err
	}
	return b.writeEntry(tw, b.DirList, "/", b.dirList)
}

// finish writes every member with names below strip, closes the archive and
// flushes.
func (b *BulkWrite) finish(tw *tar.Writer, bw *bufio.Writer, strip string) error {
	for _, m := range b.members {
		if err := b.writeEntry(tw, m.temp, strip, m.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("bulk archive: %w", err)
	}
	return bw.Flush()
}

// writeEntry writes one regular file entry for the absolute path p, named
// without its leading strip.
func (b *BulkWrite) writeEntry(tw *tar.Writer, p, strip string, data []byte) error {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(p, strip),
		Size:     int64(len(data)),
		Mode:     0o644,
		ModTime:  b.mtime,
		Format:   tar.FormatGNU,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("bulk archive: %s: %w", domain.ClipTo(p, 256), err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("bulk archive: %s: %w", domain.ClipTo(p, 256), err)
	}
	return nil
}

// countPrefix measures WritePrefix's output.
func (b *BulkWrite) countPrefix() (int64, error) {
	var c countingWriter
	err := b.WritePrefix(&c)
	return int64(c), err
}

// countingWriter counts what is written to it.
type countingWriter int64

// Write implements io.Writer.
func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
