package httpapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/core/sandbox"
)

// FileInfo is the wire form of sandbox.FileInfo (the body of GET
// files:stat, an entry of files:list, and `executor stat --json`).
//
// A name or link target is bytes, as exec output is, so it travels like
// ExecResponse's: when not valid UTF-8 its exact bytes are in name_base64
// / link_target_base64, beside a display form with U+FFFD.
type FileInfo struct {
	Name       string `json:"name"`
	NameBase64 string `json:"name_base64,omitempty"`
	// Type is "file", "directory", "symlink" or "other".
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits with setuid, setgid and sticky, in octal
	// ("0644", "4755").
	Mode             string    `json:"mode"`
	ModTime          time.Time `json:"mod_time"`
	LinkTarget       string    `json:"link_target,omitempty"`
	LinkTargetBase64 string    `json:"link_target_base64,omitempty"`
}

// NewFileInfo is the wire form of fi.
func NewFileInfo(fi sandbox.FileInfo) FileInfo {
	out := FileInfo{Type: string(fi.Type), Size: fi.Size, Mode: fmt.Sprintf("%04o", fi.Mode), ModTime: fi.ModTime.UTC()}
	out.Name, out.NameBase64 = encodeOutput(fi.Name)
	out.LinkTarget, out.LinkTargetBase64 = encodeOutput(fi.LinkTarget)
	return out
}

// Info is the sandbox.FileInfo f carries, with the exact bytes.
func (f FileInfo) Info() (sandbox.FileInfo, error) {
	mode, err := strconv.ParseUint(f.Mode, 8, 32)
	if err != nil || mode > 0o7777 {
		return sandbox.FileInfo{}, fmt.Errorf("mode %q: not octal permission bits", f.Mode)
	}
	fi := sandbox.FileInfo{Type: sandbox.FileType(f.Type), Size: f.Size, Mode: uint32(mode), ModTime: f.ModTime.UTC()}
	if fi.Name, err = decodeOutput(f.Name, f.NameBase64); err != nil {
		return sandbox.FileInfo{}, fmt.Errorf("name_base64: %w", err)
	}
	if fi.LinkTarget, err = decodeOutput(f.LinkTarget, f.LinkTargetBase64); err != nil {
		return sandbox.FileInfo{}, fmt.Errorf("link_target_base64: %w", err)
	}
	return fi, nil
}

// FileList is the body of GET files:list: the entries sorted by name.
type FileList struct {
	Entries []FileInfo `json:"entries"`
}

// NewFileList is the wire form of a listing.
func NewFileList(infos []sandbox.FileInfo) FileList {
	out := FileList{Entries: make([]FileInfo, len(infos))}
	for i, fi := range infos {
		out.Entries[i] = NewFileInfo(fi)
	}
	return out
}

// Infos is the listing l carries.
func (l FileList) Infos() ([]sandbox.FileInfo, error) {
	infos := make([]sandbox.FileInfo, len(l.Entries))
	for i, e := range l.Entries {
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("entries[%d]: %w", i, err)
		}
		infos[i] = fi
	}
	return infos, nil
}
