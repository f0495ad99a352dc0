package sandbox

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

// tempNonce matches the random part of a single write's temporary name, so
// the goldens do not depend on it.
var tempNonce = regexp.MustCompile(`(\.sandgate-write-)[0-9a-f]{16}`)

// encodeArgv writes every element of argv with its index and length, so a
// golden both reads as text and tells elements apart unambiguously.
func encodeArgv(argv []string) []byte {
	var b strings.Builder
	for i, a := range argv {
		if i != 2 {
			a = tempNonce.ReplaceAllString(a, "${1}NONCE")
		}
		fmt.Fprintf(&b, "argv[%d] %d bytes:\n%s\n", i, len(a), a)
	}
	return []byte(b.String())
}

// TestArgvGolden pins every argv the package assembles for an in-sandbox
// script, byte for byte: the scripts are part of the contract between the
// executor and every sandbox image, so a change to what ships must be a
// visible diff (go test ./core/sandbox -run ArgvGolden -update).
func TestArgvGolden(t *testing.T) {
	t.Parallel()
	b := goldenPlan(t)
	must := func(argv []string, err error) []string {
		require.NoError(t, err)
		return argv
	}
	prepare, land, discard, err := StageArgs("/work space/-x", 12)
	require.NoError(t, err)
	for name, argv := range map[string][]string{
		"write":         must(WriteArgs("/work space/-x", 12)),
		"read":          must(ReadArgs("/-a b/c", MaxFileBytes)),
		"read-stat":     must(ReadStatArgs("/-a b/c", MaxFileBytes)),
		"meta-stat":     must(StatArgs("/-a b/c")),
		"meta-list":     must(ListArgs("/-a b/c")),
		"meta-remove":   must(RemoveArgs("/-a b/c", true)),
		"meta-mkdir":    must(MkdirArgs("/-a b/c", false)),
		"stage-prepare": prepare,
		"stage-land":    land,
		"stage-discard": discard,
		"exec":          ExecArgv(ExecRequest{Command: "echo hi", Timeout: 2 * time.Second}, "/workspace"),
		"exec-kill":     must(KillGroupArgv(42)),
		"exec-probe":    must(GroupProbeArgv(42)),
		"sweep":         SweepArgs(DefaultStaleTempAge, "/"),
		"bulk-prepare":  b.PrepareCmd(),
		"bulk-rename":   b.RenameCmd(),
		"bulk-discard":  b.DiscardCmd(),
		"bulk-oneshot":  b.OneShotCmd(),
	} {
		requireGolden(t, "argv/"+name+".argv", encodeArgv(argv))
	}
}

// The scripts spell out the markers and names the Go side parses or
// matches; these pin that both say the same.
func TestScriptsAgreeWithTheirParsers(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2, strings.Count(shell.ExecWrapper, "printf '"+HeaderPrefix+"%s\\n'"), "the header")
	require.Contains(t, shell.Lib, "printf '"+faultMarker+"%s:%s:%s\\n'", "the fault marker")
	require.Contains(t, shell.Sweep, "__sg_p="+TempPrefix+"$__sg_h\n", "the temporaries' names")
	for code := ExitFileNotExist; code <= ExitNotReadable; code++ {
		require.Contains(t, shell.Lib+shell.Write+shell.Read+shell.StageLand+shell.BulkOneShot+shell.BulkDiscard,
			"__sg_fault "+strconv.Itoa(code)+" ", "exit code %d", code)
	}
}
