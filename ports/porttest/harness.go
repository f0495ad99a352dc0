// Package porttest is the conformance suite of the sandbox ports: one test
// row per observable item of CONTRACT §1–§8 (C-VAL … C-HARD, and B-7),
// written against ports.Provider and ports.Sandbox alone, so every backend
// runs the very same rows (like containerd's core/snapshots/testsuite or
// testing/fstest). A backend's integration test builds a Harness and calls
// Run; each row is a subtest named after its contract id, e.g.
// "C-EXEC-4/kills-its-watchdog", so `-run 'Conformance/C-EXEC-4'` selects a
// family.
//
// Every row provisions its own sessions (fresh ids) and reaps them through
// the port in t.Cleanup. Rows run concurrently, bounded by
// Harness.Parallelism, because the machines this runs on have two cores and
// several rows time a deadline.
package porttest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/ports"
)

// Harness is what a backend hands the suite: the provider under test, the
// images the rows provision, what the backend can express, and hooks for
// the few things the port itself cannot do.
type Harness struct {
	// Provider is the backend under test. Every container or pod it creates
	// should carry a test label so the backend's test can remove leftovers.
	Provider ports.Provider
	// Image is a local image (never pulled) with /bin/bash, GNU coreutils,
	// GNU tar, util-linux and perl (Debian's perl-base, which every Debian
	// image has: it makes the socket and the fork loop the rows need). It
	// runs as root.
	Image string
	// NonRootImage is an image whose USER is NonRootUID and whose
	// DefaultWorkdir exists and is owned by that uid (FROM Image, useradd,
	// USER), built locally by the backend's test.
	NonRootImage string
	// NonRootUID is NonRootImage's user. Default 1000.
	NonRootUID int64
	// Caps says what this backend can express; a row that needs what it
	// cannot is skipped with the reason (never silently).
	Caps Capabilities
	// NewSessionID mints the rows' session ids. Default domain.NewID("ses").
	NewSessionID func() domain.ID
	// WithRevoker returns a provider on the same endpoint (with the same
	// test labels) whose Reap revokes through r (C-REAP-1). Required: every
	// backend can be built with a revoker.
	WithRevoker func(r ports.GateTokenRevoker) ports.Provider
	// Stop stops the session's running sandbox without removing it (Docker:
	// container stop). Required when Caps.StopsSandboxes.
	Stop func(ctx context.Context, sid domain.ID) error
	// Foreign creates an asset holding the name the backend derives from sid
	// (Docker: a container named sandgate-<sid>) without the ownership label
	// but with the test label (C-PROV-5). Required.
	Foreign func(ctx context.Context, sid domain.ID) (ForeignHolder, error)
	// Parallelism bounds the rows running at once. Default 4.
	Parallelism int
	// Gated runs the gated rows (CONTRACT §9); nil skips them with the
	// reason.
	Gated *GatedHarness
}

// Capabilities are the contract items only some backends can express
// (CONTRACT §8, §4; docs/DIVERGENCES.md).
type Capabilities struct {
	// EnforcesPidsLimit: Hardening.PidsLimit caps the sandbox's processes
	// (Docker; Kubernetes ignores it, C-HARD-2).
	EnforcesPidsLimit bool
	// ClampsCPU: a CPUMillis above the endpoint's CPUs is clamped to them
	// (Docker, C-HARD-1).
	ClampsCPU bool
	// ExportsStopped: Export works on a stopped sandbox (Docker, C-EXP-1).
	ExportsStopped bool
	// StopsSandboxes: a sandbox can be stopped and kept (Docker containers;
	// a pod cannot). With it, Harness.Stop is required and the rows about
	// stopped sandboxes run (C-ATT-1, C-OWN-1, C-PROV-6, C-EXP-1).
	StopsSandboxes bool
	// PullsImages: Provision pulls a missing image itself, so an unpullable
	// one fails Provision with a clear error (Docker, C-PROV-6).
	PullsImages bool
	// RunsInit: PID 1 is an init process that reaps zombies and the
	// keep-alive is its child (Docker, C-PROV-9).
	RunsInit bool
}

// ForeignHolder is an asset a test created under a sandbox's derived name
// without the ownership label (C-PROV-5): the provider must neither adopt nor
// delete it.
type ForeignHolder interface {
	// Exists reports whether the asset is still there.
	Exists(ctx context.Context) (bool, error)
	// Remove deletes it; removing a missing one is not an error.
	Remove(ctx context.Context) error
}

// row is one conformance check.
type row struct {
	id  string // "C-EXEC-4/kills-its-watchdog"
	run func(t *testing.T, s *suite)
}

// allRows lists every family's rows in contract order.
func allRows() []row {
	var rows []row
	for _, family := range [][]row{
		valRows(), provRows(), lifeRows(), exportRows(), execRows(), execAdversarialRows(),
		readRows(), writeRows(), writeFailRows(), streamRows(), bulkRows(), hardRows(), gateRows(),
	} {
		rows = append(rows, family...)
	}
	return rows
}

// Run runs every row against h, one subtest each, Harness.Parallelism at a
// time. A missing required field fails the run at once.
//
// The rows do not call t.Parallel: go test's -parallel defaults to
// GOMAXPROCS, which would hold a two-core machine to two rows although the
// rows mostly wait on the endpoint. Instead Parallelism workers call t.Run
// concurrently (which testing allows), so the bound is the harness's
// whatever the flags.
func Run(t *testing.T, h Harness) {
	t.Helper()
	s, err := newSuite(h)
	if err != nil {
		t.Fatalf("porttest: %v", err)
	}
	rows := allRows()
	if err := checkRowIDs(rows); err != nil {
		t.Fatalf("porttest: %v", err)
	}
	queue := make(chan row, len(rows))
	for _, r := range rows { // the long rows first, so they do not end the run alone
		if slowRows[r.id] {
			queue <- r
		}
	}
	for _, r := range rows {
		if !slowRows[r.id] {
			queue <- r
		}
	}
	close(queue)
	var wg sync.WaitGroup
	for range s.h.Parallelism {
		wg.Go(func() {
			for r := range queue {
				t.Run(r.id, func(t *testing.T) { r.run(t, s) })
			}
		})
	}
	wg.Wait()
}

// slowRows take tens of seconds; Run starts them first.
var slowRows = map[string]bool{
	"C-BULK-3/ten-thousand-files":                  true,
	"C-BULK-3/ten-thousand-files-interleaved-dirs": true,
	"C-READ-2/stream-64MiB":                        true,
	"C-STREAM-1/64MiB-round-trip":                  true,
}

// suite is the state the rows share: the harness with its defaults applied.
type suite struct {
	h Harness
}

func newSuite(h Harness) (*suite, error) {
	var missing []string
	if h.Provider == nil {
		missing = append(missing, "Provider")
	}
	if h.Image == "" {
		missing = append(missing, "Image")
	}
	if h.NonRootImage == "" {
		missing = append(missing, "NonRootImage")
	}
	if h.WithRevoker == nil {
		missing = append(missing, "WithRevoker")
	}
	if h.Foreign == nil {
		missing = append(missing, "Foreign")
	}
	if h.Caps.StopsSandboxes && h.Stop == nil {
		missing = append(missing, "Stop (Caps.StopsSandboxes is set)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("harness: missing %s", strings.Join(missing, ", "))
	}
	if h.NonRootUID == 0 {
		h.NonRootUID = 1000
	}
	if h.NewSessionID == nil {
		h.NewSessionID = func() domain.ID { return domain.NewID("ses") }
	}
	if h.Parallelism <= 0 {
		h.Parallelism = 4
	}
	return &suite{h: h}, nil
}

// checkRowIDs refuses duplicate or malformed row ids, so a typo cannot hide a
// row behind another.
func checkRowIDs(rows []row) error {
	seen := map[string]bool{}
	for _, r := range rows {
		fam, variant, ok := strings.Cut(r.id, "/")
		if !ok || variant == "" || !strings.HasPrefix(fam, "C-") && !strings.HasPrefix(fam, "B-") {
			return fmt.Errorf("row id %q: want FAMILY/variant", r.id)
		}
		if seen[r.id] {
			return fmt.Errorf("row id %q: duplicate", r.id)
		}
		seen[r.id] = true
	}
	return nil
}

// RowIDs returns every row's id in run order, for a backend that lists what
// it conforms to (and for the suite's own count check).
func RowIDs() []string {
	rows := allRows()
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids
}

// needCap skips the row when the backend cannot express what it checks,
// naming the capability; under CI=true the skip is logged as such so that
// a zero-skip requirement can be checked from the output.
func needCap(t *testing.T, ok bool, name, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Logf("porttest: backend lacks %s under CI", name)
	}
	t.Skipf("backend lacks %s: %s", name, why)
}
