package shell

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// assembled is every script the package ships, by the file it ends with.
func assembled() map[string]string {
	return map[string]string{
		"write.sh": Write, "read.sh": Read, "meta.sh": Meta,
		"stage-prepare.sh": StagePrepare, "stage-land.sh": StageLand, "stage-discard.sh": StageDiscard,
		"bulk-prepare.sh": BulkPrepare, "bulk-rename.sh": BulkRename,
		"bulk-discard.sh": BulkDiscard, "bulk-oneshot.sh": BulkOneShot,
		"exec-wrapper.sh": ExecWrapper, "exec-kill-group.sh": KillGroup,
		"exec-group-probe.sh": GroupProbe, "sweep.sh": Sweep,
	}
}

func TestStripComments(t *testing.T) {
	t.Parallel()
	in := "#!/bin/bash\n# doc\nx=1 # kept: not a whole line\n\t# indented doc\n\ny='#'\n#"
	require.Equal(t, "x=1 # kept: not a whole line\n\ny='#'\n", stripComments(in))
}

func TestScriptsShipWithoutComments(t *testing.T) {
	t.Parallel()
	for name, s := range assembled() {
		for _, line := range strings.Split(s, "\n") {
			require.False(t, strings.HasPrefix(strings.TrimLeft(line, " \t"), "#"), "%s ships a comment line %q", name, line)
		}
	}
}

// Every embedded file is part of some shipped script: a file that nothing
// loads is dead text.
func TestEveryFileShips(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(files, "*")
	require.NoError(t, err)
	shipped := assembled()
	for _, n := range []string{"lib.sh", "bulk.sh", "bulk.pl"} {
		shipped[n] = ""
	}
	for _, n := range names {
		require.Contains(t, shipped, n, "%s is embedded but no script ships it", n)
	}
	require.Len(t, names, len(shipped))
}

func TestFileScriptsStartWithTheLibrary(t *testing.T) {
	t.Parallel()
	for name, s := range assembled() {
		if strings.HasPrefix(name, "bulk-") {
			require.True(t, strings.HasPrefix(s, Lib+"\n"+BulkLib), name)
		}
	}
	for _, s := range []string{Write, Read, StagePrepare, StageLand} {
		require.True(t, strings.HasPrefix(s, Lib+"\n"))
	}
}

func TestBulkPerlFitsItsQuotes(t *testing.T) {
	t.Parallel()
	require.NotContains(t, BulkPerl, "'", "bulk.sh holds the perl program in a single-quoted word")
	require.Contains(t, BulkLib, "__sgb_plprog='"+BulkPerl+"'\n")
	require.NotContains(t, BulkLib, "@BULK_PL@")
}

func TestSplicePanicsWithoutItsPlaceholder(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { splice("no placeholder", "@X@", "") })
	require.Panics(t, func() { splice("@X@ @X@", "@X@", "") })
	require.Equal(t, "a b c", splice("a @X@ c", "@X@", "b"))
}

func TestOneLinersHaveNoFinalNewline(t *testing.T) {
	t.Parallel()
	require.Equal(t, `kill -KILL -- "-$1"`, KillGroup)
	require.Equal(t, `rm -f -- "$1"`, StageDiscard)
}
