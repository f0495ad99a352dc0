package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthcheckTimeout bounds `gate -healthcheck`; probes have their own
// timeouts, but the process must never hang.
const healthcheckTimeout = 3 * time.Second

// healthcheck is `gate -healthcheck` (Docker's HEALTHCHECK and the
// Kubernetes probes): 0 when GET http://GATE_ADDR/healthz answers 200 and
// the CA file exists, 1 otherwise, with the reason on stderr. The proxy's
// /healthz turns 200 when its config is in force; the CA file is written
// just after that, and the gate removes a previous run's file before it
// listens, so requiring both never reports ready before the sandbox can
// trust the CA (B-3).
func healthcheck(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		_, _ = fmt.Fprintf(stderr, "gate unhealthy: "+format+"\n", a...)
		return 1
	}
	addr, caFile, err := healthEnv(getenv)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr.String()+"/healthz", nil)
	if err != nil {
		return fail("%v", err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fail("%v", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail("/healthz answered %d", resp.StatusCode)
	}
	fi, err := os.Stat(caFile)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return fail("no CA certificate at %s yet", caFile)
	}
	return 0
}
