package supervisor

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal pair, written out with x/sys rather
// than a pty library: posix_openpt is opening /dev/ptmx, unlockpt is
// TIOCSPTLCK, ptsname is TIOCGPTN. The slave is handed to user u (as
// grantpt would) so that programs reopening their terminal can.
func openPTY(u User) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w (is devpts mounted on /dev/pts?)", err)
	}
	var n uint32
	err = control(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlock the pty: %w", err)
		}
		var err error
		n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN)
		if err != nil {
			return fmt.Errorf("read the pty number: %w", err)
		}
		return nil
	})
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	slave = os.NewFile(uintptr(fd), name)
	if u.UID != os.Getuid() {
		if err := unix.Fchown(fd, u.UID, -1); err != nil {
			master.Close()
			slave.Close()
			return nil, nil, fmt.Errorf("give %s to %s: %w", name, u.Name, err)
		}
	}
	return master, slave, nil
}

// setWinSize sets the terminal's size; the kernel sends SIGWINCH to its
// foreground process group.
func setWinSize(master *os.File, rows, cols int) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
}

// control runs f on f's descriptor without putting it in blocking mode
// (as Fd would).
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
