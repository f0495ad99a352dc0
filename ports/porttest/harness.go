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
//
// # Rows by capability
//
// Some behaviour CONTRACT marks Docker-only. Those rows declare the
// capability they need (rows_caps.go), and Run schedules them only on a
// backend whose Harness.Caps has it; where docs/DIVERGENCES.md says what a
// backend without it does instead, a counterpart row holds that backend to
// it. Run names every row it did not schedule, and why, in one log line, so
// a backend's run has no skipped rows for capabilities:
//
//	Docker-only row (needs)                          counterpart (runs without)
//	C-HARD-1/cpu-clamped-to-endpoint (ClampsCPU)     C-HARD-1/cpu-limit-passed-through
//	C-HARD-2/pids-limit (EnforcesPidsLimit)          C-HARD-2/pids-limit-ignored
//	C-PROV-9/init-is-pid-1 (RunsInit)                C-PROV-9/keepalive-is-pid-1
//	C-PROV-6/stopped-sandbox-restarted-with-files    none (StopsSandboxes)
//	C-ATT-1/stopped-stays-stopped                    none (StopsSandboxes)
//	C-OWN-1/stopped-member                           none (StopsSandboxes)
//	C-EXP-1/stopped-sandbox                          none (ExportsStopped)
//
// The stopped-sandbox rows have no counterpart: a pod cannot be stopped and
// kept, so there is no state the port could put it in and observe. An
// unpullable image (C-PROV-6) is not a capability: Docker's pull and the
// kubelet's both fail Provision with the registry's error, so that row runs
// on every backend.
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
	// Caps says what this backend can express; Run does not schedule a row
	// that needs what it cannot (nor a counterpart of what it can) and logs
	// which rows those are and why.
	Caps Capabilities
	// NewSessionID mints the rows' session ids. Default domain.NewID("ses").
	NewSessionID func() domain.ID
	// WithTokens returns a provider on the same endpoint (with the same
	// test labels) built with tk as its gate tokens (nil: none): it mints
	// through tk and its Reap revokes through tk (C-GATE-2, C-REAP-1).
	// Required: every backend is built with its gate tokens.
	WithTokens func(tk ports.GateTokenIssuer) ports.Provider
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
	// PidsLimitOnHost: with EnforcesPidsLimit, the cap binds on the host's
	// tasks of a sandbox whose kernel is not the host's (gVisor): the
	// sandbox's own cgroup files do not show it, and a fork loop past it
	// either fails (EAGAIN or ENOMEM) with room left for at least half of
	// PidsLimit processes or ends the sandbox (docs/DIVERGENCES.md).
	PidsLimitOnHost bool
	// ClampsCPU: a CPUMillis above the endpoint's CPUs is clamped to them
	// (Docker, C-HARD-1).
	ClampsCPU bool
	// ExportsStopped: Export works on a stopped sandbox (Docker, C-EXP-1).
	ExportsStopped bool
	// StopsSandboxes: a sandbox can be stopped and kept (Docker containers;
	// a pod cannot). With it, Harness.Stop is required and the rows about
	// stopped sandboxes run (C-ATT-1, C-OWN-1, C-PROV-6, C-EXP-1).
	StopsSandboxes bool
	// RunsInit: PID 1 is an init process that reaps zombies and the
	// keep-alive is its child (Docker, C-PROV-9).
	RunsInit bool
	// Agent: operations go through an in-sandbox agent (issue 13). A
	// command that kills every process but init kills the agent with it,
	// and its exit status is lost: the call fails (never a forged result),
	// where an engine-exec backend still reads the status from the engine.
	Agent bool
	// StagesLargeWrites: a large WriteFileStream answers its path's faults
	// before a byte of its source is read (Docker stages it: a temporary
	// made first, the bytes through the archive endpoint). Elsewhere the
	// body starts flowing with the request and the refusal follows it;
	// C-STREAM-1 asks it only for a negative size.
	StagesLargeWrites bool
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

// capRow is a row that applies to some backends only: those with
// needs.capability (a Docker-only row of CONTRACT) or, when needs.without,
// those lacking it (a counterpart). The zero need applies everywhere.
type capRow struct {
	needs need
	row
}

// need is a row's condition on one capability.
type need struct {
	capability
	without bool
}

// capability is one of Capabilities' fields as data: its name, how to read
// it and the contract clause that makes it backend-specific; agent marks
// the rows of a path (the in-sandbox agent) rather than of a backend.
type capability struct {
	name   string
	has    func(Capabilities) bool
	clause string
	agent  bool
}

// with and without are a Docker-only row's need and its counterpart's.
func with(c capability) need    { return need{capability: c} }
func without(c capability) need { return need{capability: c, without: true} }

// applies reports whether a row with n runs on a backend with caps.
func (n need) applies(caps Capabilities) bool {
	return n.has == nil || n.has(caps) != n.without
}

// reason says why a row with n does not run on this backend.
func (n need) reason() string {
	if n.without {
		return fmt.Sprintf("counterpart for backends without %s, which this one has", n.name)
	}
	if n.agent {
		return fmt.Sprintf("agent-only per %s; the harness lacks %s", n.clause, n.name)
	}
	return fmt.Sprintf("Docker-only per CONTRACT %s; the harness lacks %s", n.clause, n.name)
}

// allRows lists every family's rows in contract order, then the rows that
// depend on a capability.
func allRows() []capRow {
	var rows []capRow
	for _, family := range [][]row{
		valRows(), provRows(), lifeRows(), exportRows(), execRows(), execStreamRows(), execAdversarialRows(),
		readRows(), writeRows(), writeFailRows(), streamRows(), largeStreamRows(), bulkRows(), largeBulkRows(), fsRows(),
		hardRows(), gateRows(),
	} {
		for _, r := range family {
			rows = append(rows, capRow{row: r})
		}
	}
	rows = append(rows, capRows()...)
	rows = append(rows, portRows()...)
	rows = append(rows, procRows()...)
	return append(rows, agentRows()...)
}

// plan returns the rows that apply to a backend with caps and, one line
// each, the rows that do not and why.
func plan(rows []capRow, caps Capabilities) (run []row, notApplicable []string) {
	for _, r := range rows {
		if r.needs.applies(caps) {
			run = append(run, r.row)
		} else {
			notApplicable = append(notApplicable, r.id+": "+r.needs.reason())
		}
	}
	return run, notApplicable
}

// Run runs every row that applies to h.Caps against h, one subtest each,
// Harness.Parallelism at a time, and logs once which rows do not apply and
// why. A missing required field fails the run at once.
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
	all := allRows()
	if err := checkRowIDs(all); err != nil {
		t.Fatalf("porttest: %v", err)
	}
	rows, notApplicable := plan(all, s.h.Caps)
	if len(notApplicable) > 0 {
		t.Logf("porttest: %d rows do not apply to this backend:\n\t%s", len(notApplicable), strings.Join(notApplicable, "\n\t"))
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
	"C-FS-2/list-bounded":                          true,
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
	if h.WithTokens == nil {
		missing = append(missing, "WithTokens")
	}
	if h.Gated != nil && h.Gated.Tokens == nil {
		missing = append(missing, "Gated.Tokens")
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
func checkRowIDs(rows []capRow) error {
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

// needCap skips the row when the harness lacks a piece it needs (the gated
// rows' GatedHarness and its optional hooks), naming it; under CI=true the
// skip is logged as such so that a zero-skip requirement can be checked from
// the output. Backend capabilities are not checked this way: capRow makes
// them data, and Run does not schedule what does not apply.
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
