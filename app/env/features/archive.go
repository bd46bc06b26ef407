package features

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// DefaultMaxBytes bounds one feature: its artifact as the registry sends
// it and its files unpacked. Features are scripts and their metadata,
// kilobytes; what they install comes from the network at install time.
const DefaultMaxBytes = 4 << 20

// maxFiles bounds the entries of one feature's folder.
const maxFiles = 1000

// File is one entry of a feature's folder: a regular file, a folder, or a
// link that stays inside the folder.
type File struct {
	// Name is slash-separated and relative to the feature's folder.
	Name string
	Data []byte
	// Mode is the permission bits.
	Mode int64
	// Dir and Link (the link's target) mark the other kinds.
	Dir  bool
	Link string
}

// readArchive reads a feature's tar (gzip-compressed or not, the spec's
// layer is a plain tar) into its files, refusing what could reach out of
// the folder and anything past max bytes.
func readArchive(what string, r io.Reader, max int64) ([]File, error) {
	cr := &countingReader{r: io.LimitReader(r, max+1)}
	br := bufio.NewReader(cr)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("feature %s: its archive does not read as gzip (%v): ask its author to publish it again", what, err)
		}
		defer zr.Close()
		src = zr
	}
	tooLarge := fmt.Errorf("feature %s is larger than %d MiB: a feature is a few scripts; remove it from devcontainer.json or ask its author to make it smaller", what, max>>20)
	tr := tar.NewReader(src)
	var files []File
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cr.n > max {
				return nil, tooLarge
			}
			return nil, fmt.Errorf("feature %s: its archive does not read as tar (%v): ask its author to publish it again", what, err)
		}
		if len(files) >= maxFiles {
			return nil, fmt.Errorf("feature %s has more than %d files: remove it from devcontainer.json or ask its author to make it smaller", what, maxFiles)
		}
		name, ok := cleanName(h.Name)
		if !ok {
			return nil, fmt.Errorf("feature %s: its archive holds %q, a path that leaves the feature's folder: Sandbar refuses it; ask its author to fix the archive", what, h.Name)
		}
		if name == "." {
			continue
		}
		f := File{Name: name, Mode: int64(h.FileInfo().Mode().Perm() & 0o755)}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Dir = true
		case tar.TypeReg, tar.TypeRegA:
			total += h.Size
			if h.Size > max || total > max {
				return nil, tooLarge
			}
			b, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return nil, fmt.Errorf("feature %s: read %s from its archive: %w", what, name, err)
			}
			f.Data = b
		case tar.TypeSymlink, tar.TypeLink:
			target := h.Linkname
			if h.Typeflag == tar.TypeSymlink && !strings.HasPrefix(target, "/") {
				target = path.Join(path.Dir(name), target)
			}
			t, ok := cleanName(target)
			if !ok || strings.HasPrefix(h.Linkname, "/") {
				return nil, fmt.Errorf("feature %s: its archive links %s to %q, outside the feature's folder: Sandbar refuses it; ask its author to fix the archive", what, name, h.Linkname)
			}
			if h.Typeflag == tar.TypeLink {
				// A hard link becomes a copy of what it names, read before.
				found := false
				for _, o := range files {
					if o.Name == t && !o.Dir && o.Link == "" {
						f.Data, f.Mode, found = o.Data, o.Mode, true
						total += int64(len(o.Data))
					}
				}
				if !found || total > max {
					return nil, fmt.Errorf("feature %s: its archive hard-links %s to %q, which is not a file before it: ask its author to fix the archive", what, name, h.Linkname)
				}
				break
			}
			f.Link = h.Linkname
		default:
			return nil, fmt.Errorf("feature %s: its archive holds %s, neither a file, a folder nor a link (tar type %q): Sandbar refuses it", what, name, h.Typeflag)
		}
		files = append(files, f)
	}
	return files, nil
}

// cleanName is a tar entry's name relative to the folder ("./a/../b" is
// "b"), and false when it leads out of it.
func cleanName(name string) (string, bool) {
	if strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", false
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// Archive is the feature's folder as a plain tar, the form the session
// sends to the VM's stdin: folders 0755, files with their mode (at least
// owner-readable), links as they are, owned by root, in order.
func Archive(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode | 0o600, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Mode, h.Name = tar.TypeDir, 0o755, f.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("pack %s: %w", f.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
