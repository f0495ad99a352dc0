package main

import (
	"fmt"
	"strconv"
	"syscall"
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
