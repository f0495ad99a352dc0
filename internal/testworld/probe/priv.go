package main

import (
	"fmt"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// runRaw opens a raw ICMP socket and a packet socket: both need NET_RAW,
// which a gated sandbox does not hold (they would bypass the owner match).
func runRaw(args []string) (bool, error) {
	if len(args) != 0 {
		return false, usageError("raw")
	}
	opened := false
	for _, s := range []struct {
		name              string
		domain, typ, prot int
	}{
		{"inet raw icmp", syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP},
		{"packet raw", syscall.AF_PACKET, syscall.SOCK_RAW, 0x0300}, // htons(ETH_P_ALL)
	} {
		fd, err := syscall.Socket(s.domain, s.typ, s.prot)
		if err != nil {
			fmt.Printf("%s: %v\n", s.name, err)
			continue
		}
		_ = syscall.Close(fd)
		fmt.Printf("%s: opened\n", s.name)
		opened = true
	}
	return opened, nil
}

// runFamilies tries to open a socket of each address family: those a
// sandbox needs (unix, inet, inet6, netlink) and some the gate's firewall
// does not govern (vsock reaches the host or hypervisor past the network
// namespace). It prints "<family>: opened" or the error of each, and
// succeeds when any of the ungoverned ones opened.
func runFamilies(args []string) (bool, error) {
	if len(args) != 0 {
		return false, usageError("families")
	}
	bypass := false
	for _, f := range []struct {
		name        string
		domain, typ int
		ungoverned  bool
	}{
		{"unix", unix.AF_UNIX, unix.SOCK_STREAM, false},
		{"inet", unix.AF_INET, unix.SOCK_STREAM, false},
		{"inet6", unix.AF_INET6, unix.SOCK_STREAM, false},
		{"netlink", unix.AF_NETLINK, unix.SOCK_DGRAM, false},
		{"vsock", unix.AF_VSOCK, unix.SOCK_STREAM, true},
		{"alg", unix.AF_ALG, unix.SOCK_SEQPACKET, true},
		{"packet", unix.AF_PACKET, unix.SOCK_DGRAM, true},
		{"tipc", unix.AF_TIPC, unix.SOCK_RDM, true},
	} {
		fd, err := unix.Socket(f.domain, f.typ, 0)
		if err != nil {
			fmt.Printf("%s: %v\n", f.name, err)
			continue
		}
		_ = unix.Close(fd)
		fmt.Printf("%s: opened\n", f.name)
		bypass = bypass || f.ungoverned
	}
	return bypass, nil
}

// runSetuid tries to become UID (the gate's uid, whose traffic the
// firewall lets out).
func runSetuid(args []string) (bool, error) {
	if len(args) != 1 {
		return false, usageError("setuid UID")
	}
	uid, err := strconv.Atoi(args[0])
	if err != nil {
		return false, usageError("setuid UID: %v", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return false, err
	}
	fmt.Println("uid", syscall.Getuid())
	return true, nil
}
