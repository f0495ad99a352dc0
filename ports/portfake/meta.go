package portfake

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// The fake's tree: its files, every ancestor of a file and every directory
// Mkdir made. Files are 0644 and directories 0755, all with ModTime, and
// there are no symlinks. The sentinels are the contract's (ports.Sandbox).

// ModTime is the modification time of everything in a fake sandbox.
var ModTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Stat describes path: ErrFileNotExist, ErrNotDirectory for a file in the
// parent chain.
func (b *Sandbox) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return sandbox.FileInfo{}, err
	}
	if err := b.enter(ctx, OpStat); err != nil {
		return sandbox.FileInfo{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lookup(p); err != nil {
		return sandbox.FileInfo{}, err
	}
	return b.info(p, p), nil
}

// List returns the entries of directory path, sorted: ErrNotDirectory for a
// file, Stat's errors.
func (b *Sandbox) List(ctx context.Context, p string) ([]sandbox.FileInfo, error) {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return nil, err
	}
	if err := b.enter(ctx, OpList); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lookup(p); err != nil {
		return nil, err
	}
	if _, ok := b.files[p]; ok {
		return nil, fmt.Errorf("%s: %w", p, sandbox.ErrNotDirectory)
	}
	names := map[string]bool{}
	for _, q := range b.paths() {
		if rest, ok := strings.CutPrefix(q, strings.TrimSuffix(p, "/")+"/"); ok && rest != "" {
			name, _, _ := strings.Cut(rest, "/")
			names[name] = true
		}
	}
	infos := []sandbox.FileInfo{}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		infos = append(infos, b.info(path.Join(p, name), name))
	}
	return sandbox.SortList(p, infos)
}

// Remove removes a file or a directory (with everything under it when
// recursive): ErrIsDirectory for a non-empty one without, Stat's errors.
func (b *Sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	if err := sandbox.CheckRemovePath(p); err != nil {
		return err
	}
	if err := b.enter(ctx, OpRemove); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lookup(p); err != nil {
		return err
	}
	under := []string{}
	for _, q := range b.paths() {
		if strings.HasPrefix(q, p+"/") {
			under = append(under, q)
		}
	}
	if len(under) > 0 && !recursive {
		return fmt.Errorf("%s: %w", p, sandbox.ErrIsDirectory)
	}
	for _, q := range append(under, p) {
		delete(b.files, q)
		delete(b.dirs, q)
	}
	// What stays a directory only as a file's ancestor stays one.
	b.dirs[path.Dir(p)] = true
	return nil
}

// Mkdir makes directory path: ErrIsDirectory when it exists (without
// parents), ErrFileNotExist for a missing parent (without parents),
// ErrNotDirectory for a file at path or above.
func (b *Sandbox) Mkdir(ctx context.Context, p string, parents bool) error {
	if err := sandbox.CheckMetaPath(p); err != nil {
		return err
	}
	if err := b.enter(ctx, OpMkdir); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for q := p; q != "/"; q = path.Dir(q) {
		if _, ok := b.files[q]; ok {
			return fmt.Errorf("%s: %w", p, sandbox.ErrNotDirectory)
		}
	}
	switch {
	case b.isDir(p) && parents:
		return nil
	case b.isDir(p):
		return fmt.Errorf("%s: %w", p, sandbox.ErrIsDirectory)
	case !parents && !b.isDir(path.Dir(p)):
		return fmt.Errorf("%s: %w", p, sandbox.ErrFileNotExist)
	}
	for q := p; q != "/"; q = path.Dir(q) {
		b.dirs[q] = true
	}
	return nil
}

// lookup answers whether p exists, with the lock held.
func (b *Sandbox) lookup(p string) error {
	for q := path.Dir(p); q != "/"; q = path.Dir(q) {
		if _, ok := b.files[q]; ok {
			return fmt.Errorf("%s: %w", p, sandbox.ErrNotDirectory)
		}
	}
	if _, ok := b.files[p]; ok || b.isDir(p) {
		return nil
	}
	return fmt.Errorf("%s: %w", p, sandbox.ErrFileNotExist)
}

// isDir reports whether p is a directory, with the lock held.
func (b *Sandbox) isDir(p string) bool {
	if p == "/" || b.dirs[p] {
		return true
	}
	for q := range b.files {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// paths is every file and made directory, with the lock held.
func (b *Sandbox) paths() []string {
	return append(slices.Collect(maps.Keys(b.files)), slices.Collect(maps.Keys(b.dirs))...)
}

// info describes p, which exists, named name, with the lock held.
func (b *Sandbox) info(p, name string) sandbox.FileInfo {
	if data, ok := b.files[p]; ok {
		return sandbox.FileInfo{Name: name, Type: sandbox.TypeFile, Size: int64(len(data)), Mode: 0o644, ModTime: ModTime}
	}
	return sandbox.FileInfo{Name: name, Type: sandbox.TypeDir, Size: 4096, Mode: 0o755, ModTime: ModTime}
}
