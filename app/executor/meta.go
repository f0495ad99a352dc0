package executor

import (
	"context"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
	"github.com/sandgate/sandgate/ports"
)

// Stat, ListDir, Remove and Mkdir are tracked calls like the other file
// operations: the path is checked before the session is touched, and a
// stale handle is retried once (each is safe to repeat: a remove or mkdir
// that landed before the sandbox was found gone answers the same again, or
// ErrFileNotExist / ErrIsDirectory, which say what holds).

// Stat describes a path of the session's sandbox (Sandbox.Stat).
func (s *Service) Stat(ctx context.Context, sid domain.ID, path string) (sandbox.FileInfo, error) {
	if err := session.CheckMetaPath("path", path); err != nil {
		return sandbox.FileInfo{}, err
	}
	var fi sandbox.FileInfo
	err := s.call(ctx, sid, always, func(sb ports.Sandbox) (err error) {
		fi, err = sb.Stat(ctx, path)
		return err
	})
	return fi, err
}

// ListDir lists a directory of the session's sandbox (Sandbox.List).
func (s *Service) ListDir(ctx context.Context, sid domain.ID, path string) ([]sandbox.FileInfo, error) {
	if err := session.CheckMetaPath("path", path); err != nil {
		return nil, err
	}
	var infos []sandbox.FileInfo
	err := s.call(ctx, sid, always, func(sb ports.Sandbox) (err error) {
		infos, err = sb.List(ctx, path)
		return err
	})
	return infos, err
}

// Remove removes a path of the session's sandbox (Sandbox.Remove).
func (s *Service) Remove(ctx context.Context, sid domain.ID, path string, recursive bool) error {
	if err := session.CheckRemovePath("path", path); err != nil {
		return err
	}
	return s.call(ctx, sid, always, func(sb ports.Sandbox) error { return sb.Remove(ctx, path, recursive) })
}

// Mkdir creates a directory in the session's sandbox (Sandbox.Mkdir).
func (s *Service) Mkdir(ctx context.Context, sid domain.ID, path string, parents bool) error {
	if err := session.CheckMetaPath("path", path); err != nil {
		return err
	}
	return s.call(ctx, sid, always, func(sb ports.Sandbox) error { return sb.Mkdir(ctx, path, parents) })
}
