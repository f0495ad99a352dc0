// Package seccomp is the seccomp profile of every sandbox, on both
// backends: the engine's default profile with socket(2) narrowed to the
// address families the network namespace's firewall governs. Docker takes it
// inline ("seccomp=<json>"); a Kubernetes node needs it as a file under the
// kubelet's seccomp root (a Localhost profile), which `executor
// seccomp-profile` writes.
package seccomp

import (
	"encoding/json"
	"slices"
	"sync"

	moby "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// socketFamilies are the only address families a sandbox may open a socket
// of. The gate's firewall (and Docker's "none" network) govern IP; Unix
// sockets stay inside the sandbox; netlink is how ip(8), glibc's
// getaddrinfo (AI_ADDRCONFIG) and friends read the network's state, and
// without CAP_NET_ADMIN it changes nothing. Every other family is a path
// no firewall of the network namespace sees: AF_VSOCK reaches the
// hypervisor or the host, AF_PACKET, AF_TIPC, AF_RDS, AF_CAN, AF_BLUETOOTH…
// are denied with EPERM.
var socketFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// Profile is the seccomp profile of every sandbox (C-HARD): the
// engine's default profile (moby's, as github.com/moby/profiles ships it;
// engines before 25 do not deny even AF_VSOCK) with socket(2) narrowed to
// socketFamilies, socketpair(2) to AF_UNIX, and socketcall(2) — the 32-bit
// multiplexer whose arguments sit behind a pointer seccomp cannot read —
// removed, so 32-bit code opens sockets with socket(2) (Linux ≥ 4.3) under
// the same rule. It is the JSON Docker takes as "seccomp=<profile>" and
// containerd and CRI-O read as a Localhost profile.
var Profile = sync.OnceValue(func() string {
	p := moby.DefaultProfile()
	var rules []*moby.Syscall
	for _, s := range p.Syscalls {
		s.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool {
			return n == "socket" || n == "socketcall" || n == "socketpair"
		})
		if len(s.Names) > 0 {
			rules = append(rules, s)
		}
	}
	for _, f := range socketFamilies {
		rules = append(rules, allowFamily("socket", f))
	}
	p.Syscalls = append(rules, allowFamily("socketpair", unix.AF_UNIX))
	b, err := json.Marshal(p)
	if err != nil {
		panic("seccomp: profile: " + err.Error()) // plain data: cannot happen
	}
	return string(b)
})

// allowFamily allows syscall when its first argument (the family) is f.
func allowFamily(syscall string, f uint64) *moby.Syscall {
	return &moby.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names:  []string{syscall},
		Action: specs.ActAllow,
		Args:   []specs.LinuxSeccompArg{{Index: 0, Value: f, Op: specs.OpEqualTo}},
	}}
}
