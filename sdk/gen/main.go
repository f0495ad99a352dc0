// Command gen writes the SDKs' API types and operation tables from the
// executor's OpenAPI description, so that the Python and TypeScript SDKs
// follow one source: sdk/python/sandgate/_schema.py and
// sdk/typescript/src/schema.ts. Run it from the repository root after
// changing cmd/executor/openapi.json:
//
//	go run ./sdk/gen
//
// With -check it writes nothing and fails when a committed file differs
// from what it would write (the CI check, also run by gen's unit test).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// spec is the OpenAPI description the SDKs follow.
const spec = "cmd/executor/openapi.json"

// outputs maps each generated file, relative to the repository root, to
// its renderer.
var outputs = []struct {
	path   string
	render func(*api) []byte
}{
	{"sdk/python/sandgate/_schema.py", renderPython},
	{"sdk/typescript/src/schema.ts", renderTypeScript},
}

func main() {
	check := flag.Bool("check", false, "fail when a generated file is out of date instead of writing it")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	raw, err := os.ReadFile(filepath.Join(root, spec))
	if err != nil {
		return err
	}
	a, err := load(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", spec, err)
	}
	var stale []string
	for _, o := range outputs {
		want := o.render(a)
		path := filepath.Join(root, o.path)
		if check {
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				stale = append(stale, o.path)
			}
			continue
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date with %s (run go run ./sdk/gen): %v", spec, stale)
	}
	return nil
}
