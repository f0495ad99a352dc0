package portfake

import (
	"context"
	"path"
	"strings"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// Stat describes a stored file (0644, ModTime), "/" or a stored file's
// ancestor (a directory, 0755), else answers sandbox.ErrFileNotExist.
func (f *Service) Stat(_ context.Context, sid domain.ID, p string) (sandbox.FileInfo, error) {
	if err := f.record("stat " + sid.String() + " " + p); err != nil {
		return sandbox.FileInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if data, ok := f.files[fileKey{sid, p}]; ok {
		return sandbox.FileInfo{Name: p, Type: sandbox.TypeFile, Size: int64(len(data)), Mode: 0o644, ModTime: ModTime}, nil
	}
	for k := range f.files {
		if k.sid == sid && (p == "/" || strings.HasPrefix(k.path, p+"/")) {
			return sandbox.FileInfo{Name: p, Type: sandbox.TypeDir, Size: 4096, Mode: 0o755, ModTime: ModTime}, nil
		}
	}
	return sandbox.FileInfo{}, sandbox.ErrFileNotExist
}

// ListDir answers Listing, or sandbox.ErrFileNotExist without one.
func (f *Service) ListDir(_ context.Context, sid domain.ID, p string) ([]sandbox.FileInfo, error) {
	if err := f.record("ls " + sid.String() + " " + p); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Listing == nil {
		return nil, sandbox.ErrFileNotExist
	}
	return f.Listing, nil
}

// Remove records the call ("rm SID PATH", "-r" appended when recursive)
// and drops the stored file and everything stored under it.
func (f *Service) Remove(_ context.Context, sid domain.ID, p string, recursive bool) error {
	if err := f.record("rm " + sid.String() + " " + p + flagWord(recursive, " -r")); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.files {
		if k.sid == sid && (k.path == p || strings.HasPrefix(k.path, path.Clean(p)+"/")) {
			delete(f.files, k)
		}
	}
	return nil
}

// Mkdir records the call ("mkdir SID PATH", "-p" appended with parents).
func (f *Service) Mkdir(_ context.Context, sid domain.ID, p string, parents bool) error {
	return f.record("mkdir " + sid.String() + " " + p + flagWord(parents, " -p"))
}

func flagWord(on bool, word string) string {
	if on {
		return word
	}
	return ""
}
