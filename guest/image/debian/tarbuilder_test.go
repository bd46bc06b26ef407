package debian

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Microsoft/hcsshim/ext4/tar2ext4"
)

func TestTarBuilder(t *testing.T) {
	d := t.TempDir()
	tmp := dir("./tmp/")
	tmp.mode = 0o1777
	owned := file("./etc/shadow", "s")
	owned.uid, owned.gid, owned.mode = 0, 42, 0o640
	base := makeDeb(t, d, "base", ".xz", []entry{
		dir("./"), dir("./bin/"), exe("./bin/dash", "dash!"), symlink("./bin/sh", "dash"),
		hardlink("./bin/sh2", "./bin/dash"),
		dir("./etc/"), file("./etc/passwd", "root:x:0:0\n"), owned,
		dir("./usr/"), dir("./usr/share/"), dir("./usr/share/doc/"), dir("./usr/share/doc/base/"),
		file("./usr/share/doc/base/copyright", "c"), file("./usr/share/man/man1/dash.1.gz", "m"),
		dir("./var/"), symlink("./var/run", "/run"), tmp,
		dir("./lib/"), dir("./lib/x86_64-linux-gnu/"), file("./lib/x86_64-linux-gnu/libc.so.6", "libc"),
		dir("./lib64/"), symlink("./lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld.so"),
	})
	other := makeDeb(t, d, "other", ".zst", []entry{
		dir("./"), dir("./usr/"), dir("./usr/bin/"), exe("./usr/bin/dash", "other dash"),
		dir("./var/"), dir("./var/run/"), file("./var/run/other.pid", "1"),
		dir("./usr/share/locale/de/"), file("./usr/share/locale/de/x.mo", "de"),
		file("./opt/deep/nested/file", "deep"),
		file("./etc", "a file where a dir is"),
		hardlink("./usr/bin/doclink", "./usr/share/doc/base/copyright"),
	})

	var out bytes.Buffer
	b := NewTarBuilder(&out)
	if err := b.AddFile("etc/passwd", 0o644, []byte("ours\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.AddSymlink("sbin/init", "/bin/sandbar-init"); err != nil {
		t.Fatal(err)
	}
	for _, deb := range []string{base, other} {
		if err := b.AddDeb(deb); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddFile("etc/passwd", 0o644, []byte("late")); err == nil || !strings.Contains(err.Error(), "add your own files before") {
		t.Errorf("AddFile over a package's file: err = %v, want a clear refusal", err)
	}
	if err := b.AddDir("workspace", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	type got struct {
		hdr  *tar.Header
		body string
	}
	seen := map[string]got{}
	dirs := map[string]bool{"": true}
	tr := tar.NewReader(bytes.NewReader(out.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		name := strings.TrimSuffix(h.Name, "/")
		if _, dup := seen[name]; dup {
			t.Errorf("%s appears twice", name)
		}
		if !dirs[path.Dir(name)] && path.Dir(name) != "." {
			t.Errorf("%s comes before its parent directory", name)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want root", name, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeDir {
			dirs[name] = true
		}
		seen[name] = got{h, string(body)}
	}

	checks := []struct {
		name    string
		typ     byte
		content string // body, or link target
		mode    int64
		absent  bool
	}{
		{name: "bin", typ: tar.TypeSymlink, content: "usr/bin"},
		{name: "sbin", typ: tar.TypeSymlink, content: "usr/sbin"},
		{name: "lib", typ: tar.TypeSymlink, content: "usr/lib"},
		{name: "lib64", typ: tar.TypeSymlink, content: "usr/lib64"},
		{name: "lib32", absent: true},
		{name: "usr/bin/dash", typ: tar.TypeReg, content: "dash!", mode: 0o755},
		{name: "usr/bin/sh", typ: tar.TypeSymlink, content: "dash"},
		{name: "usr/bin/sh2", typ: tar.TypeLink, content: "usr/bin/dash"},
		{name: "usr/sbin/init", typ: tar.TypeSymlink, content: "/usr/bin/sandbar-init"},
		{name: "usr/lib64/ld-linux-x86-64.so.2", typ: tar.TypeSymlink, content: "/usr/lib/x86_64-linux-gnu/ld.so"},
		{name: "usr/lib/x86_64-linux-gnu/libc.so.6", typ: tar.TypeReg, content: "libc"},
		{name: "etc/passwd", typ: tar.TypeReg, content: "ours\n", mode: 0o644},
		{name: "etc/shadow", typ: tar.TypeReg, mode: 0o640, content: "s"},
		{name: "etc", typ: tar.TypeDir},
		{name: "tmp", typ: tar.TypeDir, mode: 0o1777},
		{name: "var/run", typ: tar.TypeSymlink, content: "/run"},
		{name: "run/other.pid", typ: tar.TypeReg, content: "1"},
		{name: "run", typ: tar.TypeDir, mode: 0o755},
		{name: "opt/deep/nested/file", typ: tar.TypeReg, content: "deep"},
		{name: "opt/deep", typ: tar.TypeDir, mode: 0o755},
		{name: "workspace", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/share/doc", absent: true},
		{name: "usr/share/doc/base/copyright", absent: true},
		{name: "usr/share/man/man1/dash.1.gz", absent: true},
		{name: "usr/share/locale/de/x.mo", absent: true},
		{name: "usr/bin/doclink", absent: true},
		{name: "usr/share", typ: tar.TypeDir},
	}
	for _, c := range checks {
		g, ok := seen[c.name]
		if c.absent {
			if ok {
				t.Errorf("%s is in the tar, want it left out", c.name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s is missing", c.name)
			continue
		}
		content := g.body
		if g.hdr.Typeflag == tar.TypeSymlink || g.hdr.Typeflag == tar.TypeLink {
			content = g.hdr.Linkname
		}
		if g.hdr.Typeflag != c.typ || (c.typ != tar.TypeDir && content != c.content) || (c.mode != 0 && g.hdr.Mode != c.mode) {
			t.Errorf("%s = type %q %q mode %o; want type %q %q mode %o", c.name, g.hdr.Typeflag, content, g.hdr.Mode, c.typ, c.content, c.mode)
		}
	}

	// The stream must be one tar2ext4 takes as it is.
	img, err := os.Create(filepath.Join(d, "rootfs.ext4"))
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if err := tar2ext4.ConvertTarToExt4(bytes.NewReader(out.Bytes()), img); err != nil {
		t.Fatalf("tar2ext4 rejected the stream: %v", err)
	}
}

func TestTarBuilderSkipNil(t *testing.T) {
	deb := makeDeb(t, t.TempDir(), "doc", ".gz", []entry{dir("./"), file("./usr/share/doc/x/README", "r")})
	var out bytes.Buffer
	b := NewTarBuilder(&out)
	b.Skip = nil
	if err := b.AddDeb(deb); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("usr/share/doc/x/README")) {
		t.Error("with Skip nil, docs were still left out")
	}
	if err := b.AddFile("late", 0o644, nil); err == nil {
		t.Error("AddFile after Close succeeded")
	}
}

func TestTarBuilderModesAndFiles(t *testing.T) {
	deb := makeDeb(t, t.TempDir(), "sudo", ".xz", []entry{
		dir("./"), dir("./etc/"), file("./etc/sudoers", "root ALL=(ALL) ALL\n"), dir("./bin/"), exe("./bin/x", "x"),
	})
	var out bytes.Buffer
	b := NewTarBuilder(&out)
	b.Modes = map[string]int64{"etc/sudoers": 0o440}
	list, err := b.AddDebFiles(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(list, " "); got != "/. /etc /etc/sudoers /bin /bin/x" {
		t.Errorf("file list = %q, want the package's own paths", got)
	}
	tr := tar.NewReader(&out)
	found := false
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		if hdr.Name == "etc/sudoers" {
			found = true
			if hdr.Mode != 0o440 {
				t.Errorf("etc/sudoers mode %o, want 440", hdr.Mode)
			}
		}
	}
	if !found {
		t.Error("no etc/sudoers in the tar")
	}
}
