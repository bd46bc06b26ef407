package debian

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// entry is one tar entry of a synthetic package.
type entry struct {
	name     string
	typ      byte
	mode     int64
	body     string // file content, or link target
	uid, gid int
}

func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func file(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, mode: 0o644, body: body}
}
func symlink(name, to string) entry {
	return entry{name: name, typ: tar.TypeSymlink, mode: 0o777, body: to}
}
func hardlink(name, to string) entry {
	return entry{name: name, typ: tar.TypeLink, mode: 0o644, body: to}
}
func exe(name, body string) entry { e := file(name, body); e.mode = 0o755; return e }

func tarOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: time.Unix(1700000000, 0), Format: tar.FormatGNU}
		switch e.typ {
		case tar.TypeReg:
			h.Size = int64(len(e.body))
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = e.body
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func compress(t *testing.T, ext string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch ext {
	case "":
		return data
	case ".xz":
		w, err = xz.NewWriter(&buf)
	case ".zst":
		w, err = zstd.NewWriter(&buf)
	case ".gz":
		w = gzip.NewWriter(&buf)
	default:
		t.Fatalf("no compressor for %q", ext)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// arMember formats an ar member: header, data, padding to an even length.
func arMember(name string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", name, 0, 0, 0, "100644", len(data))
	b.Write(data)
	if len(data)%2 == 1 {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// makeDeb writes a .deb in dir whose data.tar is compressed by ext and
// holds entries, and returns its path.
func makeDeb(t *testing.T, in, name, ext string, entries []entry) string {
	t.Helper()
	control := tarOf(t, []entry{dir("./"), file("./control", "Package: "+name+"\nVersion: 1.0-1\nArchitecture: amd64\nDescription: test\n synthetic\n")})
	var deb bytes.Buffer
	deb.WriteString("!<arch>\n")
	deb.Write(arMember("debian-binary", []byte("2.0\n")))
	deb.Write(arMember("control.tar.xz", compress(t, ".xz", control)))
	deb.Write(arMember("data.tar"+ext+"/", compress(t, ext, tarOf(t, entries))))
	p := filepath.Join(in, name+".deb")
	if err := os.WriteFile(p, deb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnpack(t *testing.T) {
	entries := []entry{
		dir("./"), dir("./bin/"), exe("./bin/hello", "#!/bin/sh\necho hi\n"),
		dir("./usr/"), dir("./usr/share/"), file("./usr/share/odd", "x"), // odd size: ar padding
		symlink("./bin/hi", "hello"), hardlink("./bin/hello2", "./bin/hello"),
	}
	for _, ext := range []string{".xz", ".zst", ".gz", ""} {
		t.Run("data.tar"+ext, func(t *testing.T) {
			deb := makeDeb(t, t.TempDir(), "hello", ext, entries)
			var got []entry
			err := Unpack(deb, func(h *tar.Header, r io.Reader) error {
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				body := string(b)
				if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
					body = h.Linkname
				}
				got = append(got, entry{name: h.Name, typ: h.Typeflag, mode: h.Mode, body: body})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(entries) {
				t.Errorf("Unpack gave\n%v\nwant\n%v", got, entries)
			}
			fields, err := Control(deb)
			if err != nil || fields["Package"] != "hello" || fields["Description"] != "test\nsynthetic" {
				t.Errorf("Control = %v, %v", fields, err)
			}
		})
	}
}

func TestUnpackDamaged(t *testing.T) {
	d := t.TempDir()
	good, err := os.ReadFile(makeDeb(t, d, "ok", ".xz", []entry{dir("./"), file("./a", "aaaa")}))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]byte{
		"not ar":    []byte("PK\x03\x04 zip file"),
		"truncated": good[:len(good)-20],
		"no data":   append([]byte("!<arch>\n"), arMember("debian-binary", []byte("2.0\n"))...),
		"lzma":      append([]byte("!<arch>\n"), arMember("data.tar.lzma", []byte("xx"))...),
	}
	for name, b := range tests {
		p := filepath.Join(d, "bad.deb")
		os.WriteFile(p, b, 0o644)
		err := Unpack(p, func(h *tar.Header, r io.Reader) error { _, err := io.Copy(io.Discard, r); return err })
		if err == nil {
			t.Errorf("%s: Unpack succeeded", name)
		} else if !bytes.Contains([]byte(err.Error()), []byte("delete it from the download cache")) {
			t.Errorf("%s: error %q does not say what to do", name, err)
		}
	}
}
