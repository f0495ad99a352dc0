package seccomp

import (
	"encoding/json"
	"testing"

	moby "github.com/moby/profiles/seccomp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSeccompProfile: socket(2) is allowed only for the families the
// firewall governs (plus unix and netlink), never unconditionally;
// socketcall is gone; the rest of the default profile is kept.
func TestSeccompProfile(t *testing.T) {
	t.Parallel()
	var p moby.Seccomp
	require.NoError(t, json.Unmarshal([]byte(Profile()), &p))
	require.Equal(t, moby.DefaultProfile().DefaultAction, p.DefaultAction)
	var families []uint64
	names := map[string]bool{}
	for _, s := range p.Syscalls {
		for _, n := range s.Names {
			names[n] = true
			switch n {
			case "socket", "socketpair":
				require.Len(t, s.Args, 1, n)
				require.Equal(t, uint(0), s.Args[0].Index)
				require.EqualValues(t, "SCMP_CMP_EQ", s.Args[0].Op)
				if n == "socket" {
					families = append(families, s.Args[0].Value)
				} else {
					require.Equal(t, uint64(unix.AF_UNIX), s.Args[0].Value)
				}
			case "socketcall":
				require.Fail(t, "socketcall is allowed")
			}
		}
	}
	require.ElementsMatch(t, []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}, families)
	for _, n := range []string{"read", "connect", "execve", "clone"} {
		require.True(t, names[n], n)
	}
}
