package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want scriptFault
		ok   bool
	}{
		{"", scriptFault{}, false},
		{"boom\n", scriptFault{}, false},
		{"sandgate-fault:82:-:not a directory\n", scriptFault{Code: 82, Member: -1, Reason: "not a directory"}, true},
		{"noise\nsandgate-fault:85:3:Read-only file system\n", scriptFault{Code: 85, Member: 3, Reason: "Read-only file system"}, true},
		{"sandgate-fault:85:3:a:b:c", scriptFault{Code: 85, Member: 3, Reason: "a:b:c"}, true},
		// The last well-formed marker wins; malformed ones are skipped.
		{"sandgate-fault:81:0:x\nsandgate-fault:zz:1:y\n", scriptFault{Code: 81, Member: 0, Reason: "x"}, true},
		{"sandgate-fault:81:-7:x\n", scriptFault{}, false},
		{"sandgate-fault:81:q:x\n", scriptFault{}, false},
		{"sandgate-fault:81\n", scriptFault{}, false},
	} {
		f, ok := parseFault(tc.in)
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, f, "%q", tc.in)
	}
}

func TestClassifyScript(t *testing.T) {
	t.Parallel()
	paths := []string{"/w/a", "/w/b"}
	require.NoError(t, classifyScript(0, "sandgate-fault:82:0:x", paths))
	for code, want := range map[int]error{
		ExitFileNotExist: ErrFileNotExist, ExitIsDirectory: ErrIsDirectory, ExitNotDirectory: ErrNotDirectory,
		ExitNotRegularFile: ErrNotRegularFile, ExitNotReplaceable: ErrNotReplaceable, ExitNotWritable: ErrNotWritable,
		ExitFileTooLarge: ErrFileTooLarge, ExitShortDelivery: ErrShortDelivery, ExitSizeMismatch: ErrSizeMismatch,
	} {
		err := classifyScript(code, "", []string{"/only"})
		require.ErrorIs(t, err, want, "code %d", code)
		require.ErrorContains(t, err, "/only")
	}
	// The marker names the member…
	err := classifyScript(ExitIsDirectory, "sandgate-fault:81:1:is a directory\n", paths)
	require.ErrorIs(t, err, ErrIsDirectory)
	require.ErrorContains(t, err, "/w/b")
	// …but never a wrong one: an index out of range, or a marker whose code
	// disagrees with the exit code, names no member.
	for _, stderr := range []string{"sandgate-fault:81:2:x", "sandgate-fault:82:0:x", "garbage"} {
		err = classifyScript(ExitIsDirectory, stderr, paths)
		require.ErrorIs(t, err, ErrIsDirectory)
		require.EqualError(t, err, ErrIsDirectory.Error(), "%q", stderr)
	}
	// Not writable carries the path and the strerror.
	err = classifyScript(ExitNotWritable, "sandgate-fault:85:0:Read-only file system\n", paths)
	var pnw *PathNotWritableError
	require.ErrorAs(t, err, &pnw)
	require.Equal(t, "/w/a", pnw.Path)
	require.Equal(t, "Read-only file system", pnw.Reason)
	require.ErrorIs(t, err, ErrNotWritable)
	// Outside the protocol: unclassified, stderr clipped.
	err = classifyScript(1, strings.Repeat("e", 5000), paths)
	require.ErrorContains(t, err, "exited 1")
	require.Less(t, len(err.Error()), 700)
	for _, s := range []error{ErrNotFound, ErrFileNotExist, ErrNotWritable} {
		require.NotErrorIs(t, err, s)
	}
}

func TestPathNotWritableError(t *testing.T) {
	t.Parallel()
	e := &PathNotWritableError{Path: "/x", Reason: "Permission denied"}
	require.Equal(t, "/x: path not writable: Permission denied", e.Error())
	require.Equal(t, "/x: path not writable", (&PathNotWritableError{Path: "/x"}).Error())
	require.ErrorIs(t, e, ErrNotWritable)
	require.NotErrorIs(t, e, ErrNotFound)
}
