package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandgate/sandgate/cmd/executor/internal/mcpserver"
)

// EnvMCPToken holds the bearer token MCP clients present to `executor mcp
// --http` (a flag's value would be visible in argv).
const EnvMCPToken = "SANDGATE_MCP_TOKEN"

// runMCP is `executor mcp`: a Model Context Protocol server over stdio (the
// default: an MCP client starts it as a subprocess) or over streamable HTTP
// (--http ADDR, for clients that connect to a URL), acting on a running
// executor through its API. Credentials are given here, by the operator,
// and asked for by id: no secret is ever a tool argument.
func runMCP(ctx context.Context, s *Streams, args []string) error {
	fs, c := newFlags("mcp", false)
	var creds listFlag
	var opts mcpserver.Options
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:7090) instead of stdio; clients present $"+EnvMCPToken+" as a bearer token")
	fs.Var(&creds, "credential", "id=ID,name=VAR,secret-env=ENV,hosts=H,...,locations=headers,body: a credential sandboxes may ask for by id (repeatable)")
	fs.BoolVar(&opts.AllowUnrestricted, "allow-unrestricted", false, "let a model create sandboxes with unrestricted egress (default: allowlists only)")
	fs.StringVar(&opts.DefaultImage, "image", "", "image of a sandbox whose creator names none (default: the executor's)")
	fs.IntVar(&opts.MaxOutputBytes, "max-output", mcpserver.DefaultMaxOutputBytes, "bytes of each exec stream and file read a model gets; the middle of longer output is left out")
	fs.Int64Var(&opts.MaxExportBytes, "max-export", mcpserver.DefaultMaxExportBytes, "largest archive export_workspace returns")
	pos, err := parseArgs(fs, s, args)
	if err != nil {
		return err
	}
	if err := exactArgs(pos); err != nil {
		return err
	}
	if opts.MaxOutputBytes <= 0 || opts.MaxExportBytes <= 0 {
		return usagef("--max-output and --max-export must be positive")
	}
	// stdin carries the protocol in stdio mode: secret-stdin cannot work.
	for _, spec := range creds {
		if slices.Contains(strings.Split(spec, ","), "secret-stdin") {
			return usagef("mcp takes a credential's secret from the environment (secret-env=VAR), not stdin")
		}
	}
	if opts.Credentials, err = parseCredentials(creds, s); err != nil {
		return err
	}
	cl, err := c.client(s)
	if err != nil {
		return err
	}
	opts.Version = s.Version
	srv := mcpserver.New(cl, opts)
	if *httpAddr == "" {
		return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(s.Stdin), Writer: nopWriteCloser{s.Stdout}})
	}
	token := s.Getenv(EnvMCPToken)
	if len(token) < 16 {
		return usagef("--http needs $%s, a bearer token of at least 16 characters, for clients to present", EnvMCPToken)
	}
	return serveMCPHTTP(ctx, s, *httpAddr, token, srv)
}

// serveMCPHTTP serves srv on addr until ctx ends. Every request needs the
// bearer token: whoever reaches this endpoint commands sandboxes.
func serveMCPHTTP(ctx context.Context, s *Streams, addr, token string, srv *mcp.Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Logger: slog.New(slog.NewTextHandler(s.Stderr, nil)), SessionTimeout: time.Hour})
	hs := &http.Server{Handler: auth.RequireBearerToken(verify, nil)(h), ReadHeaderTimeout: 10 * time.Second}
	_, _ = fmt.Fprintf(s.Stderr, "executor mcp: serving streamable HTTP on http://%s/\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
