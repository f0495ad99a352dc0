package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// install copies this binary into dir as sandgate-agent, mode 0755: the
// Kubernetes init step that fills the emptyDir a sandbox mounts read-only
// (the agent image has no shell to copy with). The copy lands under a
// temporary name and is renamed, so a sandbox never sees half a binary.
func install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer func() { _ = src.Close() }()
	tmp, err := os.CreateTemp(dir, ".sandgate-agent-*")
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := io.Copy(tmp, src); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "sandgate-agent")); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return nil
}
