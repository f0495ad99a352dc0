// Command bench measures sandgate against the raw engine it runs on
// (docs/PERFORMANCE.md): every row times our operation and its baseline in
// the same run, interleaved, and reports medians and their ratio. It prints
// one line per row and writes the same rows as JSON. Absolute times only
// describe the machine they were taken on; the ratios are the result.
//
//	go run ./bench [-out bench/results.json] [-rows exec-true,write-small] [-quick] [-timeout 10m] [-agent-image sandgate/agent:dev]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Row is one measured comparison.
type Row struct {
	Name     string  `json:"row"`
	Ours     string  `json:"ours"`     // median of ours, human-readable
	Baseline string  `json:"baseline"` // median of the baseline
	Ratio    float64 `json:"ratio"`
	Target   string  `json:"target"` // e.g. "<=1.10" or ">=0.80"
	Pass     bool    `json:"pass"`
	Note     string  `json:"note,omitempty"`
	// extraMiss: a condition beyond the ratio failed (RSS growth, errors,
	// the bulk speed-up); Note says which.
	extraMiss bool
}

// line renders a row as docs/PERFORMANCE.md prints it.
func (r Row) line() string {
	verdict := "MISS"
	if r.Pass {
		verdict = "PASS"
	}
	s := fmt.Sprintf("%s %s %s ratio=%.2f target=%s %s", r.Name, r.Ours, r.Baseline, r.Ratio, r.Target, verdict)
	if r.Note != "" {
		s += " # " + r.Note
	}
	return s
}

// check decides a ratio against a target of the form "<=X" or ">=X"; a
// "report" row has no target and always passes when it ran.
func check(ratio float64, target string) bool {
	var x float64
	switch {
	case target == "report", strings.HasPrefix(target, "added"), strings.HasPrefix(target, "rss"), strings.HasPrefix(target, "p50"):
		// No ratio target: a report, or an absolute overhead or size the
		// row checks itself (extraMiss).
		return true
	case strings.HasPrefix(target, "<="):
		_, _ = fmt.Sscanf(target[2:], "%g", &x)
		return ratio <= x
	case strings.HasPrefix(target, ">="):
		_, _ = fmt.Sscanf(target[2:], "%g", &x)
		return ratio >= x
	}
	return false
}

func main() {
	out := flag.String("out", "bench/results.json", "where to write the JSON results")
	only := flag.String("rows", "", "comma-separated rows to run (default: all)")
	quick := flag.Bool("quick", false, "fewer iterations and smaller payloads (a smoke run, not a measurement)")
	image := flag.String("image", "debian:bookworm", "local sandbox image")
	agentImage := flag.String("agent-image", "sandgate/agent:dev", "local image of the in-sandbox agent (the agent rows)")
	// The whole set must fit 10 minutes on a quiet machine (docs/PERFORMANCE.md);
	// a loaded one may need longer to measure a row at all.
	timeout := flag.Duration("timeout", 10*time.Minute, "budget for the whole run")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	env, err := newEnv(ctx, *image, *agentImage, *quick)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer env.close()
	defer closeK8s()

	var rows []Row
	failed := false
	for _, r := range append(append(append(append(append(dockerRows, agentRows...), interactiveRows...), gateRows...), gvisorRows...), k8sRows...) {
		if *only != "" && !strings.Contains(","+*only+",", ","+r.name+",") {
			continue
		}
		row, err := r.run(ctx, env)
		if err != nil {
			row = Row{Name: r.name, Ours: "-", Baseline: "-", Target: r.target, Note: "error: " + err.Error()}
			failed = true
		}
		row.Name, row.Target = r.name, r.target
		if err == nil {
			row.Pass = check(row.Ratio, r.target) && !row.extraMiss
		}
		fmt.Println(row.line())
		rows = append(rows, row)
	}
	if err := writeJSON(*out, rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

func writeJSON(path string, rows []Row) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(struct {
		Date string `json:"date"`
		Rows []Row  `json:"rows"`
	}{time.Now().UTC().Format(time.RFC3339), rows}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
