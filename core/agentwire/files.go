package agentwire

import "time"

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

// File types of FileInfo.Type.
const (
	TypeFile    = "file"
	TypeDir     = "directory"
	TypeSymlink = "symlink"
	TypeOther   = "other" // FIFO, socket, device
)
