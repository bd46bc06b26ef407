package dockerbuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// archiveEntry is one entry of a test archive.
type archiveEntry struct {
	hdr  tar.Header
	data []byte
}

// goodArchive is a real OCI layout of a random image, as entries.
func goodArchive(t *testing.T) (v1.Image, []archiveEntry) {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	var es []archiveEntry
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			es = append(es, archiveEntry{hdr: tar.Header{Name: rel + "/", Typeflag: tar.TypeDir, Mode: 0o755}})
			return nil
		}
		b, _ := os.ReadFile(path)
		es = append(es, archiveEntry{hdr: tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}, data: b})
		return nil
	})
	sort.Slice(es, func(i, j int) bool { return es[i].hdr.Name < es[j].hdr.Name })
	return img, es
}

func tarOf(t *testing.T, es []archiveEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	tw.Close()
	return buf.Bytes()
}

func TestReadArchive(t *testing.T) {
	want, es := goodArchive(t)
	img, err := ReadArchive(bytes.NewReader(tarOf(t, es)), t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := want.Digest()
	gd, _ := img.Digest()
	if wd != gd {
		t.Fatalf("read image %s, want %s", gd, wd)
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 2 {
		t.Fatalf("layers %d, %v", len(ls), err)
	}
	// "./"-prefixed names, as some tars write them, read the same.
	dot := append([]archiveEntry(nil), es...)
	for i := range dot {
		dot[i].hdr.Name = "./" + dot[i].hdr.Name
	}
	if _, err := ReadArchive(bytes.NewReader(tarOf(t, dot)), t.TempDir(), 1<<20); err != nil {
		t.Errorf("./ names: %v", err)
	}
}

func TestReadArchiveRefusesHostile(t *testing.T) {
	_, good := goodArchive(t)
	blob := ""
	for _, e := range good {
		if strings.HasPrefix(e.hdr.Name, "blobs/sha256/") && e.hdr.Typeflag == tar.TypeReg {
			blob = e.hdr.Name
			break
		}
	}
	with := func(f func([]archiveEntry) []archiveEntry) []archiveEntry {
		es := append([]archiveEntry(nil), good...)
		return f(es)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	cases := []struct {
		name string
		es   []archiveEntry
		want string
	}{
		{"path traversal", with(func(es []archiveEntry) []archiveEntry {
			return append(es, archiveEntry{hdr: tar.Header{Name: "blobs/sha256/../../../outside", Typeflag: tar.TypeReg, Size: 1}, data: []byte("x")})
		}), "holds the path"},
		{"an absolute path", with(func(es []archiveEntry) []archiveEntry {
			return append(es, archiveEntry{hdr: tar.Header{Name: outside, Typeflag: tar.TypeReg, Size: 1}, data: []byte("x")})
		}), "holds the path"},
		{"a symlink for the index", with(func(es []archiveEntry) []archiveEntry {
			for i := range es {
				if es[i].hdr.Name == "index.json" {
					es[i] = archiveEntry{hdr: tar.Header{Name: "index.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}
				}
			}
			return es
		}), "as a symbolic link, not a file"},
		{"a hard link", with(func(es []archiveEntry) []archiveEntry {
			return append(es, archiveEntry{hdr: tar.Header{Name: "blobs/sha256/" + strings.Repeat("b", 64), Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}})
		}), "as a hard link"},
		{"a device", with(func(es []archiveEntry) []archiveEntry {
			return append(es, archiveEntry{hdr: tar.Header{Name: "oci-layout2", Typeflag: tar.TypeChar}})
		}), "as a device"},
		{"a file no layout has", with(func(es []archiveEntry) []archiveEntry {
			return append(es, archiveEntry{hdr: tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Size: 1}, data: []byte("x")})
		}), `holds "run.sh"`},
		{"a blob that is not its digest", with(func(es []archiveEntry) []archiveEntry {
			for i := range es {
				if es[i].hdr.Name == blob {
					d := append([]byte(nil), es[i].data...)
					d[0] ^= 1
					es[i].data = d
				}
			}
			return es
		}), "is not its digest"},
		{"a name twice", with(func(es []archiveEntry) []archiveEntry {
			for _, e := range es {
				if e.hdr.Name == "index.json" {
					return append(es, e)
				}
			}
			return es
		}), "twice"},
		{"no index", with(func(es []archiveEntry) []archiveEntry {
			var out []archiveEntry
			for _, e := range es {
				if e.hdr.Name != "index.json" {
					out = append(out, e)
				}
			}
			return out
		}), "has no index.json"},
		{"a missing layer", with(func(es []archiveEntry) []archiveEntry {
			var out []archiveEntry
			for _, e := range es {
				if e.hdr.Name != blob {
					out = append(out, e)
				}
			}
			return out
		}), "does not hold"},
		{"a huge index", with(func(es []archiveEntry) []archiveEntry {
			for i := range es {
				if es[i].hdr.Name == "index.json" {
					es[i].hdr.Size = maxJSON + 1
					es[i].data = make([]byte, maxJSON+1)
				}
			}
			return es
		}), "index.json\" of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ReadArchive(bytes.NewReader(tarOf(t, c.es)), filepath.Join(dir, "layout"), 64<<20)
			if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadArchive saying %q", err, c.want)
			}
			if _, err := os.Lstat(outside); err == nil {
				t.Fatal("the archive wrote outside its folder")
			}
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if d != nil && d.Type()&fs.ModeSymlink != 0 {
					t.Errorf("the archive left a link at %s", p)
				}
				return nil
			})
		})
	}
	t.Run("oversized", func(t *testing.T) {
		_, err := ReadArchive(bytes.NewReader(tarOf(t, good)), t.TempDir(), 1000)
		var se *SizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "size limit") {
			t.Fatalf("got %v, want a SizeError", err)
		}
	})
	t.Run("not a tar", func(t *testing.T) {
		_, err := ReadArchive(strings.NewReader(strings.Repeat("garbage!", 200)), t.TempDir(), 1<<20)
		if !errors.Is(err, ErrBadArchive) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{tail: 3, fn: func(l string) { got = append(got, l) }}
	w.Write([]byte("STEP 1/2: FROM x\nhello \x1b[31mred\x1b[0m\r\npart"))
	w.Write([]byte("ial\n" + strings.Repeat("y", 2500) + "\nlast"))
	w.flush()
	want := []string{"STEP 1/2: FROM x", "hello red", "partial", strings.Repeat("y", maxLine), strings.Repeat("y", maxLine), strings.Repeat("y", 500), "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q", got)
	}
	if l := w.last(); len(l) != 3 || l[2] != "last" {
		t.Errorf("tail %q", l)
	}
}
