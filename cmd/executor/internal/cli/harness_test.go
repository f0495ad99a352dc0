package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sandgate/sandgate/adapters/httpapi"
	"github.com/sandgate/sandgate/ports/portfake"
)

const testToken = "sgapi_test_token"

// result is what one Run did.
type result struct {
	code           int
	stdout, stderr string
}

// harness runs the CLI against an httptest server over a portfake.Service.
type harness struct {
	t        *testing.T
	svc      *portfake.Service
	url      string
	env      map[string]string
	stdin    io.Reader
	terminal bool
	hc       *http.Client
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	svc := portfake.NewService()
	// Like today's service, the fake refuses a checkpointing delete.
	svc.NoCheckpoints = true
	srv := httptest.NewServer(httpapi.NewAPIHandler(svc, httpapi.APIOptions{Token: testToken}))
	t.Cleanup(srv.Close)
	return &harness{t: t, svc: svc, url: srv.URL, env: map[string]string{EnvURL: srv.URL, EnvToken: testToken}}
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	var out, errOut bytes.Buffer
	s := Streams{
		Stdin: h.stdin, Stdout: &out, Stderr: &errOut,
		Getenv:           func(k string) string { return h.env[k] },
		StderrIsTerminal: h.terminal,
		HTTPClient:       h.hc,
	}
	code := Run(context.Background(), args, s)
	return result{code, out.String(), errOut.String()}
}
