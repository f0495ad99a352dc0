package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
)

// FileArgs name a file or directory in a sandbox.
type FileArgs struct {
	SessionID string `json:"session_id" jsonschema:"the id create_sandbox returned"`
	Path      string `json:"path" jsonschema:"absolute path in the sandbox, e.g. /workspace/main.py"`
}

// ReadOut is a file's content.
type ReadOut struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding" jsonschema:"utf-8, or base64 when the file is not text"`
	Size      int64  `json:"size" jsonschema:"the file's whole size in bytes"`
	Truncated bool   `json:"truncated,omitempty" jsonschema:"only the first part of the file is shown; use exec with sed -n or tail for the rest"`
}

// WriteArgs are write_file's arguments.
type WriteArgs struct {
	SessionID string `json:"session_id" jsonschema:"the id create_sandbox returned"`
	Path      string `json:"path" jsonschema:"absolute path in the sandbox; missing parent directories are made"`
	Content   string `json:"content" jsonschema:"the whole new content of the file"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf-8 (default) or base64 for binary content"`
}

// WriteOut confirms a write.
type WriteOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// Entry is one directory entry.
type Entry struct {
	Name    string `json:"name"`
	Type    string `json:"type" jsonschema:"file, directory, symlink or other"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode"`
	ModTime string `json:"mod_time"`
	Target  string `json:"link_target,omitempty"`
}

// ListFilesOut lists a directory.
type ListFilesOut struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
}

// ExportArgs are export_workspace's arguments.
type ExportArgs struct {
	SessionID string `json:"session_id" jsonschema:"the id create_sandbox returned"`
	Root      string `json:"root,omitempty" jsonschema:"absolute directory to export (default: the sandbox's working directory)"`
}

func (s *server) addFileTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: `Read a file from a sandbox. Text comes back as is, other content as base64.
Large files are cut after the first part (truncated: true).`, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.readFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: `Create or replace a file in a sandbox with the given content, atomically.
Parent directories are made. Prefer this over echo or heredocs in exec for source files.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}, s.writeFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_files", Description: "List a directory in a sandbox: name, type, size, mode and modification time of each entry.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.listFiles)
	mcp.AddTool(srv, &mcp.Tool{Name: "export_workspace", Description: `Export a directory of a sandbox (default the workspace) as a tar archive,
returned as an embedded resource, to keep the results of your work.`, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.export)
}

func (s *server) readFile(ctx context.Context, _ *mcp.CallToolRequest, in FileArgs) (*mcp.CallToolResult, ReadOut, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, ReadOut{}, toolError("read_file", err)
	}
	b, size, cut, err := s.read(ctx, sid, in.Path)
	if err != nil {
		return nil, ReadOut{}, toolError("read_file", err)
	}
	if text := trimPartialRune(b, cut); utf8.Valid(text) {
		return nil, ReadOut{Size: size, Truncated: cut, Encoding: "utf-8", Content: string(text)}, nil
	}
	return nil, ReadOut{Size: size, Truncated: cut, Encoding: "base64", Content: base64.StdEncoding.EncodeToString(b)}, nil
}

// read returns at most MaxOutputBytes of the file, its whole size and
// whether it was cut.
func (s *server) read(ctx context.Context, sid domain.ID, p string) ([]byte, int64, bool, error) {
	rc, size, err := s.cl.ReadFile(ctx, sid, p, 0)
	if err != nil {
		return nil, 0, false, err
	}
	defer func() { _ = rc.Close() }()
	b, cut, err := readCapped(rc, int64(s.opts.MaxOutputBytes))
	return b, size, cut, err
}

// trimPartialRune drops a rune the cut split, so that cut text stays text.
func trimPartialRune(b []byte, cut bool) []byte {
	if !cut {
		return b
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

func (s *server) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteArgs) (*mcp.CallToolResult, WriteOut, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, WriteOut{}, toolError("write_file", err)
	}
	body := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		if body, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, WriteOut{}, fmt.Errorf("write_file failed: invalid_argument: content is not base64: %w", err)
		}
	default:
		return nil, WriteOut{}, fmt.Errorf("write_file failed: invalid_argument: encoding %q is neither utf-8 nor base64", in.Encoding)
	}
	if err := s.cl.WriteFile(ctx, sid, in.Path, bytes.NewReader(body), int64(len(body))); err != nil {
		return nil, WriteOut{}, toolError("write_file", err)
	}
	return nil, WriteOut{Path: in.Path, Bytes: len(body)}, nil
}

func (s *server) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in FileArgs) (*mcp.CallToolResult, ListFilesOut, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, ListFilesOut{}, toolError("list_files", err)
	}
	infos, err := s.cl.ListDir(ctx, sid, in.Path)
	if err != nil {
		return nil, ListFilesOut{}, toolError("list_files", err)
	}
	out := ListFilesOut{Path: in.Path, Entries: []Entry{}}
	for _, fi := range infos {
		out.Entries = append(out.Entries, Entry{Name: fi.Name, Type: string(fi.Type), Size: fi.Size,
			Mode: fmt.Sprintf("%04o", fi.Mode), ModTime: fi.ModTime.Format("2006-01-02T15:04:05Z"), Target: fi.LinkTarget})
	}
	return nil, out, nil
}

// export answers with the archive as an embedded resource, refusing one
// past MaxExportBytes rather than handing a model a broken tar.
func (s *server) export(ctx context.Context, _ *mcp.CallToolRequest, in ExportArgs) (*mcp.CallToolResult, any, error) {
	sid, err := domain.ParseSessionID(in.SessionID)
	if err != nil {
		return nil, nil, toolError("export_workspace", err)
	}
	root := in.Root
	if root == "" {
		if root, err = s.workdir(ctx, sid); err != nil {
			return nil, nil, toolError("export_workspace", err)
		}
	}
	rc, err := s.cl.Export(ctx, sid, root)
	if err != nil {
		return nil, nil, toolError("export_workspace", err)
	}
	defer func() { _ = rc.Close() }()
	b, cut, err := readCapped(rc, s.opts.MaxExportBytes)
	if err != nil {
		return nil, nil, toolError("export_workspace", err)
	}
	if cut {
		return nil, nil, fmt.Errorf("export_workspace failed: file_too_large: the archive exceeds %d bytes; export a smaller root or delete build outputs first", s.opts.MaxExportBytes)
	}
	uri := "sandgate://sessions/" + sid.String() + "/export.tar"
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: fmt.Sprintf("tar archive of %s, %d bytes", root, len(b))},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "application/x-tar", Blob: b}},
	}}, nil, nil
}

// workdir is the session's working directory: the workspace an export
// takes by default.
func (s *server) workdir(ctx context.Context, sid domain.ID) (string, error) {
	info, err := s.cl.Get(ctx, sid)
	if err != nil {
		return "", err
	}
	if info.Workdir == "" {
		return sandbox.DefaultWorkdir, nil
	}
	return info.Workdir, nil
}
