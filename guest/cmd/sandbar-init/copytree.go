//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// copyStats counts what copyTree copied.
type copyStats struct {
	files, bytes int64
}

// copyTree copies the tree at src to dst (created; its parents must
// exist) with everything an overlay layer holds: regular files, folders,
// symlinks, hard links, device nodes (an overlay's whiteouts are
// character devices 0/0), fifos, owners, modes (setuid included), times
// and extended attributes of every namespace (trusted.overlay.opaque
// marks an opaque folder; security.capability a file's capabilities).
// Sockets are skipped: they mean nothing on a disk. It never follows a
// symlink, and it refuses a path that is not under src, so a tree that
// changes under it cannot lead it elsewhere.
func copyTree(src, dst string) (copyStats, error) {
	var st copyStats
	links := map[[2]uint64]string{} // (dev, ino) of a file with nlink > 1 -> its first copy
	type dirTimes struct {
		path string
		at   [2]unix.Timespec
	}
	var dirs []dirTimes
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("%s is not under %s", p, src)
		}
		to := filepath.Join(dst, rel)
		var s unix.Stat_t
		if err := unix.Lstat(p, &s); err != nil {
			return err
		}
		times := [2]unix.Timespec{s.Atim, s.Mtim}
		mode := s.Mode & unix.S_IFMT
		if s.Nlink > 1 && mode != unix.S_IFDIR {
			key := [2]uint64{s.Dev, s.Ino}
			if first, ok := links[key]; ok {
				if err := unix.Link(first, to); err != nil {
					return fmt.Errorf("link %s: %w", to, err)
				}
				return nil
			}
			links[key] = to
		}
		switch mode {
		case unix.S_IFDIR:
			if err := os.Mkdir(to, 0o700); err != nil && !(rel == "." && errors.Is(err, fs.ErrExist)) {
				return err
			}
		case unix.S_IFREG:
			n, err := copyFile(p, to)
			if err != nil {
				return err
			}
			st.bytes += n
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO:
			if err := unix.Mknod(to, s.Mode&(unix.S_IFMT|0o777), int(s.Rdev)); err != nil {
				return fmt.Errorf("make %s: %w", to, err)
			}
		default: // a socket
			return nil
		}
		st.files++
		// chown first: it clears setuid, setgid and security.capability.
		if err := unix.Lchown(to, int(s.Uid), int(s.Gid)); err != nil {
			return fmt.Errorf("chown %s: %w", to, err)
		}
		if err := copyXattrs(p, to); err != nil {
			return err
		}
		if mode != unix.S_IFLNK {
			if err := unix.Fchmodat(unix.AT_FDCWD, to, s.Mode&0o7777, 0); err != nil {
				return fmt.Errorf("chmod %s: %w", to, err)
			}
		}
		if mode == unix.S_IFDIR {
			dirs = append(dirs, dirTimes{to, times}) // after its entries are made
			return nil
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, to, times[:], unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return st, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, dirs[i].path, dirs[i].at[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return st, err
		}
	}
	return st, nil
}

// copyFile copies the regular file src to the new file dst.
func copyFile(src, dst string) (int64, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in) // copy_file_range where it can
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", src, err)
	}
	return n, nil
}

// copyXattrs copies every extended attribute of src to dst, neither
// followed if a symlink.
func copyXattrs(src, dst string) error {
	size, err := unix.Llistxattr(src, nil)
	if errors.Is(err, unix.ENOTSUP) || size <= 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the attributes of %s: %w", src, err)
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(src, buf)
	if err != nil {
		return fmt.Errorf("list the attributes of %s: %w", src, err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		n, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			return fmt.Errorf("read %s of %s: %w", name, src, err)
		}
		val := make([]byte, n)
		if n, err = unix.Lgetxattr(src, name, val); err != nil {
			return fmt.Errorf("read %s of %s: %w", name, src, err)
		}
		if err := unix.Lsetxattr(dst, name, val[:n], 0); err != nil {
			return fmt.Errorf("set %s on %s: %w", name, dst, err)
		}
	}
	return nil
}
