// Package initramfs writes the guest's initramfs: a newc cpio archive
// holding sandbar-init as /init, the device nodes it needs before devtmpfs
// is mounted, and the kernel modules it loads, with their load order in
// /etc/sandbar/modules.
//
// The archive is written uncompressed: the emulated kernel unpacks it
// faster than a gzip of it (figures at Build). This package does not build
// the root disk (see guest/image).
package initramfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// Writer writes a newc ("070701") cpio archive, as the Linux kernel unpacks
// into its initial rootfs. Entries have mtime 0, owner root and inode
// numbers counted from 1, so the same calls give the same bytes. Missing
// parent directories are added (0755) before an entry, so parents always
// come first.
type Writer struct {
	w      io.Writer
	n      int64 // bytes written
	ino    uint32
	seen   map[string]bool
	closed bool
	err    error
}

// NewWriter returns a Writer that writes the archive to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, seen: map[string]bool{}}
}

// cpio mode bits (<sys/stat.h>), which are not fs.FileMode's.
const (
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
	sIFCHR = 0o020000
	sIFBLK = 0o060000
)

// AddDir adds a directory. perm may carry fs.ModeSticky.
func (w *Writer) AddDir(name string, perm fs.FileMode) error {
	return w.add(name, sIFDIR|unixPerm(perm), nil, 0, 0)
}

// unixPerm maps permission, setuid, setgid and sticky bits to st_mode's.
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	return p
}

// AddFile adds a regular file holding data.
func (w *Writer) AddFile(name string, perm fs.FileMode, data []byte) error {
	return w.add(name, sIFREG|unixPerm(perm), data, 0, 0)
}

// AddSymlink adds a symbolic link to target.
func (w *Writer) AddSymlink(name, target string) error {
	if target == "" {
		return fmt.Errorf("initramfs: symlink %s has an empty target", name)
	}
	return w.add(name, sIFLNK|0o777, []byte(target), 0, 0)
}

// AddDevice adds a device node. mode is fs.ModeDevice, with
// fs.ModeCharDevice for a character device, and the permission bits.
func (w *Writer) AddDevice(name string, mode fs.FileMode, major, minor uint32) error {
	if mode&fs.ModeDevice == 0 {
		return fmt.Errorf("initramfs: device %s: mode %v is not a device (set fs.ModeDevice)", name, mode)
	}
	typ := uint32(sIFBLK)
	if mode&fs.ModeCharDevice != 0 {
		typ = sIFCHR
	}
	return w.add(name, typ|uint32(mode.Perm()), nil, major, minor)
}

// Close writes the trailer and pads the archive to a multiple of 512 bytes.
// It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if err := w.header("TRAILER!!!", 0, 0, 0, 0, 0); err != nil {
		return err
	}
	w.closed = true
	if pad := (512 - w.n%512) % 512; pad > 0 {
		w.write(make([]byte, pad))
	}
	return w.err
}

// cleanName turns a path into the archive's form: relative, clean, no "./".
func cleanName(name string) (string, error) {
	c := path.Clean("/" + name)
	if c == "/" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("initramfs: bad entry name %q", name)
	}
	return c[1:], nil
}

func (w *Writer) add(name string, mode uint32, data []byte, major, minor uint32) error {
	if w.closed {
		return errors.New("initramfs: write after Close")
	}
	name, err := cleanName(name)
	if err != nil {
		return err
	}
	if w.seen[name] {
		return fmt.Errorf("initramfs: %s added twice", name)
	}
	if dir := path.Dir(name); dir != "." && !w.seen[dir] {
		if err := w.add(dir, sIFDIR|0o755, nil, 0, 0); err != nil {
			return err
		}
	}
	w.seen[name] = true
	w.ino++
	nlink := uint32(1)
	if mode&0o170000 == sIFDIR {
		nlink = 2
	}
	if err := w.header(name, w.ino, mode, nlink, uint32(len(data)), uint64(major)<<32|uint64(minor)); err != nil {
		return err
	}
	w.write(data)
	w.pad4()
	return w.err
}

// header writes one newc header and the NUL-terminated, padded name. rdev
// packs major in the high 32 bits.
func (w *Writer) header(name string, ino, mode, nlink, size uint32, rdev uint64) error {
	if w.err != nil {
		return w.err
	}
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, uint32(rdev>>32), uint32(rdev), len(name)+1, 0)
	w.write([]byte(h))
	w.write([]byte(name))
	w.write([]byte{0})
	w.pad4()
	return w.err
}

func (w *Writer) pad4() {
	if pad := (4 - w.n%4) % 4; pad > 0 {
		w.write(make([]byte, pad))
	}
}

func (w *Writer) write(b []byte) {
	if w.err != nil || len(b) == 0 {
		return
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("initramfs: write: %w", err)
	}
}
