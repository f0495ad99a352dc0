package agentwire

import (
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// FileInfo describes one path, as lstat(2) sees it.
type FileInfo struct {
	// Name is the base name (PathList) or the path asked for (PathStat).
	Name string `json:"name"`
	// Type is one of the FileType constants.
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits with setuid, setgid and sticky (07777).
	Mode    uint32    `json:"mode"`
	ModTime time.Time `json:"mod_time"`
	// LinkTarget is a symlink's target, unresolved.
	LinkTarget string `json:"link_target,omitempty"`
}

// File types of FileInfo.Type: core/sandbox's FileType strings.
const (
	TypeFile    = string(sandbox.TypeFile)
	TypeDir     = string(sandbox.TypeDir)
	TypeSymlink = string(sandbox.TypeSymlink)
	TypeOther   = string(sandbox.TypeOther) // FIFO, socket, device
)

// StagedFile is one member of a PathFilesStage or PathFilesLand batch.
type StagedFile struct {
	// Path is the member's target.
	Path string `json:"path"`
	// Tmp is its temporary name beside Path (sandbox.TempPrefix and 16
	// hex digits), where the transfer puts its bytes.
	Tmp  string `json:"tmp"`
	Size int64  `json:"size"`
}
