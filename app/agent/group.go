package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// groupAlive reports whether the process group pgid has a member that is
// not a zombie: the question exec-group-probe.sh asks, answered from
// /proc/*/stat. kill(-pgid, 0) answers first when the group is gone
// altogether (it counts zombies, so its "yes" is only a maybe).
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return true // cannot tell: the deadline decides
	}
	for _, p := range stats {
		state, pgrp, ok := readStat(p)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// readStat returns the state and process group of one /proc/PID/stat. The
// command name may hold any byte, ") " included, so the fields are counted
// from the last ")".
func readStat(p string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, false // the process has just gone
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:]) // state ppid pgrp ...
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], n, true
}

// killGroup SIGKILLs every member of the process group pgid. A group that
// is already gone is not an error worth reporting: killing is idempotent.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
