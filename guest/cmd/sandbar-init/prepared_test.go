//go:build linux

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyTreeKeepsAnOverlayLayer copies a tree holding what an
// overlay's upper folder holds (a whiteout, an opaque folder, a setuid
// file, file capabilities, hard links, a symlink, a fifo, owners and
// times) and checks each on the copy. Device nodes and trusted.* need
// root; CI runs as root.
func TestCopyTreeKeepsAnOverlayLayer(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (device nodes, trusted.* attributes)")
	}
	src := filepath.Join(t.TempDir(), "upper")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(src, "opt/tool"), 0o750))
	must(os.WriteFile(filepath.Join(src, "usr/bin/sudo"), []byte("#!/bin/sh\n"), 0o755))
	must(unix.Chmod(filepath.Join(src, "usr/bin/sudo"), 0o4755))
	must(os.WriteFile(filepath.Join(src, "usr/bin/ping"), []byte("ping"), 0o755))
	// security.capability for cap_net_raw+ep (VFS_CAP_REVISION_2).
	capv := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	must(unix.Lsetxattr(filepath.Join(src, "usr/bin/ping"), "security.capability", capv, 0))
	must(os.Link(filepath.Join(src, "usr/bin/ping"), filepath.Join(src, "usr/bin/ping2")))
	must(unix.Mknod(filepath.Join(src, "usr/bin/removed"), unix.S_IFCHR|0, 0)) // a whiteout
	must(unix.Lsetxattr(filepath.Join(src, "opt/tool"), "trusted.overlay.opaque", []byte("y"), 0))
	must(os.Symlink("../usr/bin/sudo", filepath.Join(src, "opt/tool/link")))
	must(unix.Mkfifo(filepath.Join(src, "opt/tool/fifo"), 0o600))
	must(os.WriteFile(filepath.Join(src, "opt/tool/data"), make([]byte, 1<<20), 0o640))
	must(os.Chown(filepath.Join(src, "opt/tool/data"), 1000, 1000))
	must(os.Lchown(filepath.Join(src, "opt/tool/link"), 1000, 1000))
	old := unix.NsecToTimespec(1_600_000_000_000_000_000)
	must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(src, "opt/tool"), []unix.Timespec{old, old}, 0))

	dst := filepath.Join(t.TempDir(), "root")
	st, err := copyTree(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.files != 11 || st.bytes != 1<<20+10+4 {
		t.Errorf("copied %d entries, %d bytes; want 11 (a hard link is no new entry) and %d", st.files, st.bytes, 1<<20+14)
	}
	lstat := func(p string) unix.Stat_t {
		t.Helper()
		var s unix.Stat_t
		must(unix.Lstat(filepath.Join(dst, p), &s))
		return s
	}
	if s := lstat("usr/bin/sudo"); s.Mode&0o7777 != 0o4755 {
		t.Errorf("sudo's mode is %o, want 4755 (setuid kept)", s.Mode&0o7777)
	}
	if s := lstat("usr/bin/removed"); s.Mode&unix.S_IFMT != unix.S_IFCHR || s.Rdev != 0 {
		t.Errorf("the whiteout is mode %o rdev %d, want a character device 0/0", s.Mode, s.Rdev)
	}
	if a, b := lstat("usr/bin/ping"), lstat("usr/bin/ping2"); a.Ino != b.Ino {
		t.Error("the hard link became two files")
	}
	buf := make([]byte, 64)
	if n, err := unix.Lgetxattr(filepath.Join(dst, "usr/bin/ping"), "security.capability", buf); err != nil || string(buf[:n]) != string(capv) {
		t.Errorf("ping's capabilities: %x, %v; want %x", buf[:max(n, 0)], err, capv)
	}
	if n, err := unix.Lgetxattr(filepath.Join(dst, "opt/tool"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("the opaque mark: %q, %v", buf[:max(n, 0)], err)
	}
	if s := lstat("opt/tool"); s.Mode&0o777 != 0o750 || s.Mtim.Sec != old.Sec {
		t.Errorf("opt/tool: mode %o, mtime %d; want 750 and %d", s.Mode&0o777, s.Mtim.Sec, old.Sec)
	}
	if s := lstat("opt/tool/data"); s.Uid != 1000 || s.Gid != 1000 || s.Mode&0o777 != 0o640 || s.Size != 1<<20 {
		t.Errorf("data: %d:%d mode %o size %d", s.Uid, s.Gid, s.Mode&0o777, s.Size)
	}
	if target, err := os.Readlink(filepath.Join(dst, "opt/tool/link")); err != nil || target != "../usr/bin/sudo" {
		t.Errorf("the link: %q, %v", target, err)
	}
	if s := lstat("opt/tool/link"); s.Uid != 1000 {
		t.Errorf("the link's owner is %d, want 1000 (never its target's)", s.Uid)
	}
	if s := lstat("opt/tool/fifo"); s.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("the fifo is mode %o", s.Mode)
	}
}

// TestReadIgnored: the list git prints is read as workspace-relative
// paths, outermost only; what would leave the workspace or touch .git is
// dropped.
func TestReadIgnored(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ignored")
	list := strings.Join([]string{"node_modules/", ".venv/", "build/out.o", "node_modules/x/", "../etc/passwd", "/etc/shadow",
		"a/../../b", ".git/hooks/", ".git", "sub/node_modules/", "", "./odd"}, "\x00")
	if err := os.WriteFile(p, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readIgnored(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".venv", "build/out.o", "node_modules", "sub/node_modules"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readIgnored = %q, want %q", got, want)
	}
	if got, err := readIgnored(filepath.Join(t.TempDir(), "none")); err != nil || got != nil {
		t.Errorf("a missing list: %q, %v; want nothing", got, err)
	}
}

// TestCopyIgnoredNeverFollowsALink: a parent that is a symlink in the
// layer (pointing out of it) copies nothing; a real one copies the path
// with its parents' owners.
func TestCopyIgnoredNeverFollowsALink(t *testing.T) {
	upper, dst := t.TempDir(), t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600)
	os.MkdirAll(filepath.Join(outside, "node_modules"), 0o755)
	os.WriteFile(filepath.Join(outside, "node_modules", "secret"), []byte("host"), 0o600)
	if err := os.Symlink(outside, filepath.Join(upper, "sub")); err != nil {
		t.Fatal(err)
	}
	if st, err := copyIgnored(upper, dst, "sub/node_modules"); err != nil || st.files != 0 {
		t.Errorf("through a symlinked parent: %+v, %v; want nothing copied", st, err)
	}
	os.MkdirAll(filepath.Join(upper, "pkg", "node_modules", "left-pad"), 0o755)
	os.WriteFile(filepath.Join(upper, "pkg", "node_modules", "left-pad", "index.js"), []byte("x"), 0o644)
	st, err := copyIgnored(upper, dst, "pkg/node_modules")
	if err != nil || st.files != 3 {
		t.Fatalf("copyIgnored = %+v, %v; want 3 entries", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "pkg", "node_modules", "left-pad", "index.js")); err != nil || string(b) != "x" {
		t.Errorf("the copy: %q, %v", b, err)
	}
	if st, err := copyIgnored(upper, dst, "absent/dir"); err != nil || st.files != 0 {
		t.Errorf("an absent path: %+v, %v", st, err)
	}
}

func TestEnvLowers(t *testing.T) {
	env := t.TempDir()
	if got := envLowers(env, "/lower"); got != "/lower" {
		t.Errorf("no root/ on the disk: %q", got)
	}
	os.Mkdir(filepath.Join(env, "root"), 0o755)
	os.Mkdir(filepath.Join(env, "workspace"), 0o755)
	if got := envLowers(env, "/lower"); got != env+"/root:/lower" {
		t.Errorf("envLowers = %q", got)
	}
	if got := workspaceLowers(env, "/wsbase/repo"); got != env+"/workspace:/wsbase/repo" {
		t.Errorf("workspaceLowers = %q", got)
	}
	if got := envLowers("", "/lower"); got != "/lower" {
		t.Errorf("no env: %q", got)
	}
}

func TestParseCmdlinePrepared(t *testing.T) {
	c, err := parseCmdline("sandbar.root=/dev/vda sandbar.env=/dev/vde sandbar.capture=/dev/vdf")
	if err != nil || c.env != "/dev/vde" || c.capture != "/dev/vdf" {
		t.Errorf("parseCmdline = env %q capture %q, %v", c.env, c.capture, err)
	}
	for _, bad := range []string{"sandbar.env=vde", "sandbar.capture=../x"} {
		if _, err := parseCmdline(bad); err == nil {
			t.Errorf("parseCmdline(%q) took a device outside /dev", bad)
		}
	}
}
