package initramfs

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sandbar/guest/image/kernel"
)

// entry is one record read back from a newc archive.
type entry struct {
	name         string
	ino, mode    uint32
	nlink, mtime uint32
	rmaj, rmin   uint32
	data         []byte
	offset       int // of the header
}

// readNewc parses a newc archive strictly: magic, 4-byte alignment of
// headers and data, a trailer, and only zero padding after it.
func readNewc(t *testing.T, b []byte) []entry {
	t.Helper()
	var out []entry
	off := 0
	for {
		if off%4 != 0 {
			t.Fatalf("header at %d is not 4-byte aligned", off)
		}
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("no newc header at %d", off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("header at %d field %d: %v", off, i, err)
			}
			return uint32(v)
		}
		e := entry{ino: field(0), mode: field(1), nlink: field(4), mtime: field(5), rmaj: field(9), rmin: field(10), offset: off}
		if field(2) != 0 || field(3) != 0 || field(12) != 0 {
			t.Fatalf("entry at %d: uid/gid/check not zero", off)
		}
		size, namesize := int(field(6)), int(field(11))
		nameEnd := off + 110 + namesize
		if b[nameEnd-1] != 0 {
			t.Fatalf("entry at %d: name not NUL-terminated", off)
		}
		e.name = string(b[off+110 : nameEnd-1])
		dataStart := (nameEnd + 3) &^ 3
		e.data = b[dataStart : dataStart+size]
		off = (dataStart + size + 3) &^ 3
		if e.name == "TRAILER!!!" {
			if len(b)%512 != 0 {
				t.Fatalf("archive is %d bytes, not padded to 512", len(b))
			}
			if bytes.Count(b[off:], []byte{0}) != len(b)-off {
				t.Fatal("non-zero bytes after the trailer")
			}
			return out
		}
		out = append(out, e)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	steps := []error{
		w.AddDir("/etc", 0o755),
		w.AddFile("etc/hello", 0o640, []byte("hello")), // odd size: data padding
		w.AddSymlink("./etc/link", "hello"),
		w.AddDevice("dev/console", fs.ModeDevice|fs.ModeCharDevice|0o600, 5, 1), // parent added
		w.AddDevice("dev/vda", fs.ModeDevice|0o660, 254, 0),
		w.AddDir("tmp", 0o777|fs.ModeSticky),
		w.AddFile("a/b/c", 0o755, []byte("abc")),
		w.Close(),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	got := readNewc(t, buf.Bytes())
	type want struct {
		name       string
		mode       uint32
		rmaj, rmin uint32
		data       string
	}
	wants := []want{
		{"etc", 0o040755, 0, 0, ""},
		{"etc/hello", 0o100640, 0, 0, "hello"},
		{"etc/link", 0o120777, 0, 0, "hello"},
		{"dev", 0o040755, 0, 0, ""},
		{"dev/console", 0o020600, 5, 1, ""},
		{"dev/vda", 0o060660, 254, 0, ""},
		{"tmp", 0o041777, 0, 0, ""},
		{"a", 0o040755, 0, 0, ""},
		{"a/b", 0o040755, 0, 0, ""},
		{"a/b/c", 0o100755, 0, 0, "abc"},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(wants), got)
	}
	for i, wnt := range wants {
		e := got[i]
		if e.name != wnt.name || e.mode != wnt.mode || e.rmaj != wnt.rmaj || e.rmin != wnt.rmin || string(e.data) != wnt.data {
			t.Errorf("entry %d = %q mode %o dev %d:%d data %q; want %q mode %o dev %d:%d data %q",
				i, e.name, e.mode, e.rmaj, e.rmin, e.data, wnt.name, wnt.mode, wnt.rmaj, wnt.rmin, wnt.data)
		}
		if e.ino != uint32(i+1) || e.mtime != 0 {
			t.Errorf("entry %d: ino %d mtime %d, want %d and 0", i, e.ino, e.mtime, i+1)
		}
	}
}

func TestWriterRejects(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *Writer) error
		want string
	}{
		{"duplicate", func(w *Writer) error { w.AddDir("x", 0o755); return w.AddFile("/x", 0o644, nil) }, "added twice"},
		{"root", func(w *Writer) error { return w.AddDir("/", 0o755) }, "bad entry name"},
		{"not a device", func(w *Writer) error { return w.AddDevice("dev/x", 0o600, 1, 1) }, "not a device"},
		{"empty symlink", func(w *Writer) error { return w.AddSymlink("l", "") }, "empty target"},
		{"after close", func(w *Writer) error { w.Close(); return w.AddDir("x", 0o755) }, "after Close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(NewWriter(&bytes.Buffer{}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func testModules() []kernel.Module {
	return []kernel.Module{
		{Name: "virtio_ring", Path: "kernel/drivers/virtio/virtio_ring.ko", Data: []byte("\x7fELF ring")},
		{Name: "virtio_blk", Path: "kernel/drivers/block/virtio_blk.ko", Depends: []string{"virtio_ring"},
			Aliases: []string{"virtio:d00000002v*"}, Data: []byte("\x7fELF blk!")},
	}
}

func TestBuild(t *testing.T) {
	var buf bytes.Buffer
	if err := Build(&buf, []byte("#!init"), "6.1.0-56-amd64", testModules()); err != nil {
		t.Fatal(err)
	}
	entries := readNewc(t, buf.Bytes())
	byName := map[string]entry{}
	for _, e := range entries {
		byName[e.name] = e
		if dir := filepath.Dir(e.name); dir != "." {
			if p, ok := byName[dir]; !ok || p.mode&0o170000 != 0o040000 {
				t.Errorf("%s comes before its parent directory %s", e.name, dir)
			}
		}
	}
	checks := []struct {
		name       string
		mode       uint32
		rmaj, rmin uint32
		data       string
	}{
		{"init", 0o100755, 0, 0, "#!init"},
		{"dev/console", 0o020600, 5, 1, ""},
		{"dev/null", 0o020666, 1, 3, ""},
		{"tmp", 0o041777, 0, 0, ""},
		{"newroot", 0o040755, 0, 0, ""},
		{"proc", 0o040755, 0, 0, ""},
		{"lib/modules/6.1.0-56-amd64/kernel/drivers/block/virtio_blk.ko", 0o100644, 0, 0, "\x7fELF blk!"},
		{"etc/sandbar/modules", 0o100644, 0, 0,
			"lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio_ring.ko:\n" +
				"lib/modules/6.1.0-56-amd64/kernel/drivers/block/virtio_blk.ko: lib/modules/6.1.0-56-amd64/kernel/drivers/virtio/virtio_ring.ko\n"},
		{"etc/sandbar/modules.alias", 0o100644, 0, 0, "alias virtio:d00000002v* virtio_blk\n"},
	}
	for _, c := range checks {
		e, ok := byName[c.name]
		if !ok {
			t.Errorf("%s missing", c.name)
			continue
		}
		if e.mode != c.mode || e.rmaj != c.rmaj || e.rmin != c.rmin || (c.data != "" && string(e.data) != c.data) {
			t.Errorf("%s: mode %o dev %d:%d data %q; want mode %o dev %d:%d data %q", c.name, e.mode, e.rmaj, e.rmin, e.data, c.mode, c.rmaj, c.rmin, c.data)
		}
	}

	var again bytes.Buffer
	if err := Build(&again, []byte("#!init"), "6.1.0-56-amd64", testModules()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two builds of the same input differ")
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		init []byte
		kver string
		mods []kernel.Module
		want string
	}{
		{"no init", nil, "6.1", nil, "no init binary"},
		{"bad kver", []byte("x"), "../6.1", nil, "bad kernel version"},
		{"empty module", []byte("x"), "6.1", []kernel.Module{{Name: "m", Path: "m.ko"}}, `module "m" has no path or data`},
		{"dependency out of order", []byte("x"), "6.1", []kernel.Module{{Name: "m", Path: "m.ko", Depends: []string{"d"}, Data: []byte("x")}},
			"module m needs d, which is not before it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Build(&bytes.Buffer{}, tt.init, tt.kver, tt.mods)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestBuildWithCpioTool lists the archive with GNU cpio, when installed, as
// a second opinion on the format.
func TestBuildWithCpioTool(t *testing.T) {
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		t.Skip("cpio is not installed")
	}
	var buf bytes.Buffer
	if err := Build(&buf, []byte("#!init"), "6.1.0-56-amd64", testModules()); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "initramfs")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cpio, "-t", "-v", "--quiet", "-F", f)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v\n%s", err, out)
	}
	for _, want := range []string{"crw-------", "5,   1", "dev/console", "-rwxr-xr-x", "init", "etc/sandbar/modules"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("cpio -tv output lacks %q:\n%s", want, out)
		}
	}
}
