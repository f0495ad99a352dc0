package agent

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal of cols × rows: its master, for the
// agent, and its terminal, for the command. It is creack/pty's Open with
// system calls, and one difference that matters here: the master stays
// non-blocking, so Go's poller owns it — a read in progress ends when the
// master is closed (creack/pty's ioctls call Fd, which turns the master
// blocking, and a pump would then outlive its proc for as long as a
// straggler holds the terminal).
func openPTY(cols, rows int) (master, tty *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	fail := func(what string, err error) (*os.File, *os.File, error) {
		_ = master.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlockpt", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		return fail("ptsname", err)
	}
	if err := setSize(master, cols, rows); err != nil {
		return fail("set size", err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	tfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open "+name, err)
	}
	return master, os.NewFile(uintptr(tfd), name), nil
}

// setSize sets the terminal's size through its master; the kernel sends
// SIGWINCH to the terminal's foreground process group.
func setSize(master *os.File, cols, rows int) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err != nil {
		return err
	}
	return ioErr
}
