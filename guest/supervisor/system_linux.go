package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LinuxSystem is System for the real guest, where the supervisor runs as
// root on a writable (overlay) root file system.
type LinuxSystem struct{}

// Facts returns the kernel release, the CPU count and total memory.
func (LinuxSystem) Facts() (kernel string, cpus int, memory uint64) {
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		memory = uint64(si.Totalram) * uint64(si.Unit)
	}
	return kernel, runtime.NumCPU(), memory
}

// EnsureUser adds name to /etc/passwd, /etc/group and /etc/shadow when it
// is missing there, and creates its home owned by it. An existing entry
// wins over uid and home.
func (LinuxSystem) EnsureUser(name string, uid int, home string) (User, error) {
	u, err := ensureUser("/etc", name, uid, home)
	if err != nil {
		return User{}, err
	}
	if err := os.MkdirAll(u.Home, 0o750); err != nil {
		return User{}, fmt.Errorf("create home %s: %w", u.Home, err)
	}
	if err := os.Chown(u.Home, u.UID, u.GID); err != nil {
		return User{}, fmt.Errorf("give home %s to %s: %w", u.Home, name, err)
	}
	return u, nil
}

// LookupUser finds an account in /etc/passwd, by name or by uid.
func (LinuxSystem) LookupUser(nameOrUID string) (User, bool, error) {
	return lookupUser("/etc/passwd", nameOrUID)
}

// ensureUser does the /etc part of EnsureUser under etc.
func ensureUser(etc, name string, uid int, home string) (User, error) {
	passwd := filepath.Join(etc, "passwd")
	if u, ok, err := lookupUser(passwd, name); err != nil || ok {
		return u, err
	}
	gid := uid
	shell := "/bin/sh"
	if _, err := os.Stat("/bin/bash"); err == nil {
		shell = "/bin/bash"
	}
	if err := appendLine(passwd, fmt.Sprintf("%s:x:%d:%d::%s:%s", name, uid, gid, home, shell)); err != nil {
		return User{}, err
	}
	if err := appendIfMissing(filepath.Join(etc, "group"), name, fmt.Sprintf("%s:x:%d:", name, gid), true); err != nil {
		return User{}, err
	}
	days := time.Now().Unix() / 86400
	err := appendIfMissing(filepath.Join(etc, "shadow"), name, fmt.Sprintf("%s:*:%d:0:99999:7:::", name, days), false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return User{}, err
	}
	return User{Name: name, UID: uid, GID: gid, Home: home}, nil
}

// lookupUser finds name in passwd; a name that is a number is a uid,
// which finds the first account of that uid.
func lookupUser(passwd, name string) (User, bool, error) {
	data, err := os.ReadFile(passwd)
	if errors.Is(err, fs.ErrNotExist) {
		return User{}, false, nil // an image without users yet
	}
	if err != nil {
		return User{}, false, fmt.Errorf("read %s: %w", passwd, err)
	}
	_, numErr := strconv.Atoi(name)
	byUID := numErr == nil
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 7 || (byUID && f[2] != name) || (!byUID && f[0] != name) {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return User{}, false, fmt.Errorf("%s: bad entry for %s: fix or remove it", passwd, name)
		}
		return User{Name: f[0], UID: uid, GID: gid, Home: f[5]}, true, nil
	}
	return User{}, false, nil
}

// appendIfMissing appends line to path unless an entry for name is there.
// A missing file is made when create says so (an image without users
// yet), else it is an error.
func appendIfMissing(path, name, line string, create bool) error {
	data, err := os.ReadFile(path)
	if create && errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for l := range bytes.Lines(data) {
		if bytes.HasPrefix(l, []byte(name+":")) {
			return nil
		}
	}
	return appendLine(path, line)
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	// Start on a fresh line even if the file lacks its final newline.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(path); err == nil {
			if _, err := r.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
				line = "\n" + line
			}
			r.Close()
		}
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// SetTime sets the wall clock.
func (LinuxSystem) SetTime(t time.Time) error {
	tv := unix.NsecToTimeval(t.UnixNano())
	if err := unix.Settimeofday(&tv); err != nil {
		return fmt.Errorf("settimeofday: %w", err)
	}
	return nil
}

// DiskUsage returns used and total bytes of the file system holding path.
func (LinuxSystem) DiskUsage(path string) (used, total uint64, err error) {
	return diskUsage(path)
}

// Poweroff syncs the disks and lets PID 1 power the machine off.
//
// The supervisor is PID 1's child, so it does not power off itself: it
// syncs and returns, Serve returns nil, the supervise process exits, and
// PID 1 (sandbar-init) ends what is left, remounts the disks read-only (so
// the scratch disk is clean at the next boot), unmounts and powers off.
func (LinuxSystem) Poweroff() error {
	unix.Sync()
	return nil
}
