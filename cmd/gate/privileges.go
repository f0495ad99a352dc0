package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// dropPrivileges gives up root for good: supplementary groups none, then
// the gid, then the uid (the uid last, since changing the others needs
// root). On Linux Go's syscall.Setgroups/Setgid/Setuid apply to every thread
// of the process. Leaving uid 0 clears the permitted and effective
// capabilities, NET_ADMIN included, so the firewall can no longer be
// changed by this process. It then checks all of that, rather than trusting
// the calls.
func dropPrivileges(uid, gid uint32) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups(none): %w", err)
	}
	if err := syscall.Setgid(int(gid)); err != nil {
		return fmt.Errorf("setgid(%d): %w", gid, err)
	}
	if err := syscall.Setuid(int(uid)); err != nil {
		return fmt.Errorf("setuid(%d): %w", uid, err)
	}
	return verifyDropped(uid, gid, false)
}

// verifyDropped checks the process's ids, groups and capabilities, and that
// setuid(0) and setgid(0) now fail. ownGroup admits gid itself as a
// supplementary group: a container runtime that starts the process as
// uid:gid lists the primary group there too (containerd does), and it
// grants nothing the gid does not.
func verifyDropped(uid, gid uint32, ownGroup bool) error {
	if u, eu := syscall.Getuid(), syscall.Geteuid(); u != int(uid) || eu != int(uid) {
		return fmt.Errorf("uid %d, euid %d after setuid(%d)", u, eu, uid)
	}
	if g, eg := syscall.Getgid(), syscall.Getegid(); g != int(gid) || eg != int(gid) {
		return fmt.Errorf("gid %d, egid %d after setgid(%d)", g, eg, gid)
	}
	groups, err := syscall.Getgroups()
	if err != nil {
		return fmt.Errorf("getgroups: %w", err)
	}
	for _, g := range groups {
		if !ownGroup || g != int(gid) {
			return fmt.Errorf("supplementary groups %v remain", groups)
		}
	}
	if err := syscall.Setuid(0); err == nil {
		return errors.New("setuid(0) still succeeds")
	}
	if err := syscall.Setgid(0); err == nil {
		return errors.New("setgid(0) still succeeds")
	}
	return noCapabilities("/proc/self/status")
}

// noCapabilities checks that the permitted, effective and ambient capability
// sets in a /proc/<pid>/status file are empty.
func noCapabilities(statusFile string) (err error) {
	f, err := os.Open(statusFile)
	if err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("capabilities: %w", cerr)
		}
	}()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "CapPrm" && name != "CapEff" && name != "CapAmb") {
			continue
		}
		seen++
		if v := strings.TrimSpace(value); strings.Trim(v, "0") != "" {
			return fmt.Errorf("capabilities: %s is %s, want none", name, v)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if seen != 3 {
		return fmt.Errorf("capabilities: %s lacks CapPrm, CapEff or CapAmb", statusFile)
	}
	return nil
}
