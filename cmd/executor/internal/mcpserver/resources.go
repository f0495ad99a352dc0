package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandgate/sandgate/core/domain"
)

// fileURIPrefix starts a sandbox file's URI:
// sandgate://sessions/SESSION/files/ABSOLUTE/PATH.
const fileURIPrefix = "sandgate://sessions/"

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "sandbox-file",
		Title:       "A file in a sandbox",
		URITemplate: fileURIPrefix + "{session_id}/files{+path}",
		Description: "The content of a file in a sandbox, by absolute path (at most the server's output cap; text or binary).",
	}, s.readResource)
}

// readResource serves a file's URI: text when it is UTF-8, a blob
// otherwise; a file past the cap is refused rather than served cut, since a
// resource has no truncation mark.
func (s *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	sid, p, err := parseFileURI(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	b, size, cut, err := s.read(ctx, sid, p)
	if err != nil {
		return nil, toolError("read "+uri, err)
	}
	if cut {
		return nil, fmt.Errorf("read %s failed: file_too_large: %d bytes, more than %d; use read_file or exec", uri, size, s.opts.MaxOutputBytes)
	}
	c := &mcp.ResourceContents{URI: uri}
	if utf8.Valid(b) {
		c.MIMEType, c.Text = "text/plain; charset=utf-8", string(b)
	} else {
		c.MIMEType, c.Blob = "application/octet-stream", b
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// parseFileURI splits sandgate://sessions/SESSION/files/PATH into the
// session and the absolute path /PATH.
func parseFileURI(uri string) (domain.ID, string, error) {
	rest, ok := strings.CutPrefix(uri, fileURIPrefix)
	if !ok {
		return domain.ID{}, "", fmt.Errorf("not a sandbox file URI")
	}
	id, p, ok := strings.Cut(rest, "/files/")
	if !ok {
		return domain.ID{}, "", fmt.Errorf("not a sandbox file URI")
	}
	sid, err := domain.ParseSessionID(id)
	if err != nil {
		return domain.ID{}, "", err
	}
	// A URI percent-encodes what a path may hold (spaces, %, non-ASCII).
	p, err = url.PathUnescape(p)
	return sid, "/" + p, err
}
