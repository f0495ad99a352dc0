package sandgate_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// The repository is self-contained: a clone alone resolves what its files
// cite. The contract, the design card and the performance targets once lived
// in a folder beside the repository, and 463 contract references in comments
// resolved only there. They are in docs/ now; these tests keep anything from
// pointing out again.

// outsideHome names where the design documents used to live, beside the
// repository: any mention of it is a reference a clone cannot follow.
var outsideHome = regexp.MustCompile(`\.\./shared\b|\bshared/spec/|\bseed/sandbox-api`)

// pathToken is a run of characters a relative path is made of.
var pathToken = regexp.MustCompile(`[A-Za-z0-9_.~/*-]+`)

// traversalFixtures are escaping paths that tests hand to the code under test
// on purpose (a checkpoint member that climbs out of the workdir): inputs, not
// references to files.
var traversalFixtures = map[string]bool{"../../etc/passwd": true}

// selfFile is this file: its patterns spell out what they look for.
const selfFile = "docs_test.go"

func TestNoPathLeavesTheRepository(t *testing.T) {
	t.Parallel()
	var found []string
	for _, name := range trackedTextFiles(t) {
		if name == selfFile {
			continue
		}
		for i, line := range strings.Split(readFile(t, name), "\n") {
			for _, bad := range leavingPaths(name, line) {
				found = append(found, fmt.Sprintf("%s:%d: %s", name, i+1, bad))
			}
		}
	}
	require.Empty(t, found, "paths that leave the repository: point them at docs/ or inside the repository")
}

func TestLeavingPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, line string
		want       []string
	}{
		{"README.md", "Beside this repository, in `../shared/`: DESIGN.md", []string{"../shared/"}},
		{"docs/BENCHMARKS.md", "every row of `../shared/spec/PERFORMANCE.md`", []string{"../shared/spec/PERFORMANCE.md"}},
		{"core/sandbox/doc.go", "// the sandbox API (seed/sandbox-api.txt)", []string{"seed/sandbox-api.txt"}},
		{"Makefile", "include ../common.mk", []string{"../common.mk"}},
		{"deploy/helm/x_test.go", `glob("../../../x/*.go")`, []string{"../../../x/*.go"}},
		{"deploy/compose/compose.yaml", "context: ../..", nil},
		{"deploy/helm/x_test.go", `glob("../../cmd/executor/*.go")`, nil},
		{"docs/DESIGN.md", "[ARCHITECTURE.md](../ARCHITECTURE.md)", nil},
		{"core/x.go", `{"/w/../etc/passwd", "ses_x/../y", "a/.../b"}`, nil},
		{"app/x_test.go", `tarMember(t, "../../etc/passwd")`, nil},
	} {
		require.Equal(t, tc.want, leavingPaths(tc.file, tc.line), "%s: %s", tc.file, tc.line)
	}
}

// leavingPaths returns the paths in one line of file that leave the
// repository: a mention of the old outside home, or a relative path whose
// "../" climbs above the root from file's folder. Absolute paths are the
// machine's, not the repository's, and are left alone.
func leavingPaths(file, line string) []string {
	var out []string
	for _, tok := range pathToken.FindAllString(line, -1) {
		switch {
		case outsideHome.MatchString(tok):
			out = append(out, tok)
		case strings.HasPrefix(tok, "/") || strings.HasPrefix(tok, "~") || traversalFixtures[tok]:
			// the machine's paths, or a test's input
		case climbs(path.Join(path.Dir(file), tok)):
			out = append(out, tok)
		}
	}
	return out
}

func climbs(p string) bool { return p == ".." || strings.HasPrefix(p, "../") }

// mdLink is a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	var broken []string
	for _, name := range trackedTextFiles(t) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(readFile(t, name), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := path.Join(path.Dir(name), target)
			if _, err := os.Stat(file); err != nil || (anchor != "" && !hasHeading(t, file, anchor)) {
				broken = append(broken, name+": "+m[1])
			}
		}
	}
	require.Empty(t, broken, "Markdown links to nothing in the repository")
}

// hasHeading reports whether the Markdown file has a heading whose anchor,
// as the forges derive it (lower case, punctuation dropped, spaces to
// dashes), is anchor.
func hasHeading(t *testing.T, file, anchor string) bool {
	t.Helper()
	for _, line := range strings.Split(readFile(t, file), "\n") {
		title := strings.TrimLeft(line, "#")
		if len(title) < len(line) && slug(strings.TrimSpace(title)) == anchor {
			return true
		}
	}
	return false
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for title, want := range map[string]string{
		"Configuring `executor serve`": "configuring-executor-serve",
		"After a crash":                "after-a-crash",
		"P5 — docs, `B-6` (later)":     "p5--docs-b-6-later",
	} {
		require.Equal(t, want, slug(title), title)
	}
}

// slug is a heading's anchor.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// contractID is how code, scripts and docs cite an item of docs/CONTRACT.md:
// C-EXEC-3, B-6.
var contractID = regexp.MustCompile(`\b(?:C-[A-Z]+-[0-9]+|B-[0-9]+)\b`)

// fakeIDs are item ids made up to test the parsing of ids, not citations.
var fakeIDs = map[string]bool{"C-X-1": true}

func TestContractItemsResolve(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	for _, id := range contractID.FindAllString(readFile(t, "docs/CONTRACT.md"), -1) {
		defined[id] = true
	}
	var missing []string
	for _, name := range trackedTextFiles(t) {
		for _, id := range contractID.FindAllString(readFile(t, name), -1) {
			if !defined[id] && !fakeIDs[id] {
				missing = append(missing, name+": "+id)
			}
		}
	}
	require.Empty(t, missing, "contract items the code cites that docs/CONTRACT.md does not define")
}

// trackedTextFiles lists the files git tracks, without the binary ones.
// Untracked files (build output, .bin) are not the repository's.
func trackedTextFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && os.Getenv("CI") != "true" {
		t.Skipf("git ls-files (not a git checkout?): %v: %s", err, stderr.String())
	}
	require.NoError(t, err, "git ls-files: %s", stderr.String())
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		if !bytes.ContainsRune(data, 0) {
			names = append(names, name)
		}
	}
	require.NotEmpty(t, names, "git ls-files listed no text file: the checks would hold vacuously")
	return names
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(data)
}
