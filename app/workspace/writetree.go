package workspace

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// treeWriter is where writeTree puts a tree: a base disk's tar stream
// (baseWriter) or a folder on the host (exportWriter). Names are
// slash-separated and relative to the tree's root; each call gets the
// whole of one entry.
type treeWriter interface {
	dir(name string) error
	file(name string, mode, size int64, r io.Reader) error
	symlink(name, target string) error
}

// writeTree writes a tree read from the mirror under prefix ("" or a
// folder ending in "/"): blobs as files or symlinks, as git stores them,
// and each submodule as an empty folder (writeModule fills the carried
// ones on a base disk). Nothing the repository configures is applied
// (cat-file runs no filter).
func (m *Mirror) writeTree(ctx context.Context, bw treeWriter, prefix string, es []treeEntry, done func(int)) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	cmd := command(ctx, m.Dir, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("read objects from %s: %w", m.Dir, err)
	}
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	// Requests go in from another goroutine: cat-file's output would
	// fill its pipe before it read them all.
	reqDone := make(chan error, 1)
	go func() {
		bw := bufio.NewWriter(in)
		for _, e := range es {
			if e.kind == "blob" {
				if _, err := bw.WriteString(e.oid + "\n"); err != nil {
					reqDone <- err
					return
				}
			}
		}
		reqDone <- errors.Join(bw.Flush(), in.Close())
	}()
	r := bufio.NewReaderSize(outPipe, 1<<20)
	for i, e := range es {
		if i%256 == 0 {
			done(i)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if e.kind == "commit" {
			if err := bw.dir(prefix + e.path); err != nil {
				return err
			}
			continue
		}
		if e.kind != "blob" {
			continue
		}
		hdr, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read %s from %s: %w", e.path, m.Dir, err)
		}
		f := strings.Fields(hdr)
		if len(f) != 3 || f[0] != e.oid || f[1] != "blob" {
			return fmt.Errorf("read %s from %s: git printed %q", e.path, m.Dir, strings.TrimSpace(hdr))
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("read %s: size %q", e.path, f[2])
		}
		body := io.LimitReader(r, size)
		switch {
		case e.mode == 0o120000:
			target, err := io.ReadAll(io.LimitReader(body, 4096))
			if err != nil {
				return err
			}
			if err := bw.symlink(prefix+e.path, string(target)); err != nil {
				return err
			}
		default:
			perm := int64(0o644)
			if e.mode&0o111 != 0 {
				perm = 0o755
			}
			if err := bw.file(prefix+e.path, perm, size, body); err != nil {
				return err
			}
		}
		// What a writer left unread (a file it skipped) is not the next
		// object's header.
		if _, err := io.Copy(io.Discard, body); err != nil {
			return err
		}
		if _, err := r.Discard(1); err != nil { // the newline after each object
			return err
		}
	}
	return <-reqDone
}

// baseWriter writes a base disk's tar stream: everything owned by the
// agent's uid, folders made as they are first needed.
type baseWriter struct {
	tw    *tar.Writer
	mtime time.Time
	dirs  map[string]bool
}

func (b *baseWriter) parents(name string) error {
	if name == "." {
		return nil
	}
	d := path.Dir(name)
	if b.dirs[d] {
		return nil
	}
	return b.dir(d)
}

func (b *baseWriter) hdr(name string, typ byte, mode int64) *tar.Header {
	return &tar.Header{Name: BaseRoot + "/" + name, Typeflag: typ, Mode: mode, Uid: AgentUID, Gid: AgentUID, ModTime: b.mtime, Format: tar.FormatPAX}
}

func (b *baseWriter) dir(name string) error {
	if err := b.parents(name); err != nil {
		return err
	}
	if b.dirs[name] {
		return nil
	}
	b.dirs[name] = true
	if name == "." {
		return b.tw.WriteHeader(b.hdr("", tar.TypeDir, 0o755))
	}
	return b.tw.WriteHeader(b.hdr(name+"/", tar.TypeDir, 0o755))
}

func (b *baseWriter) file(name string, mode, size int64, r io.Reader) error {
	if err := b.parents(name); err != nil {
		return err
	}
	h := b.hdr(name, tar.TypeReg, mode)
	h.Size = size
	if err := b.tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(b.tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, want %d", name, n, size)
	}
	return err
}

func (b *baseWriter) symlink(name, target string) error {
	if err := b.parents(name); err != nil {
		return err
	}
	h := b.hdr(name, tar.TypeSymlink, 0o777)
	h.Linkname = target
	return b.tw.WriteHeader(h)
}

func (b *baseWriter) copyFile(from, to string, mode int64) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return b.file(to, mode, fi.Size(), f)
}

func (b *baseWriter) included(f includedFile) error {
	if f.link != "" {
		return b.symlink(f.rel, f.link)
	}
	return b.file(f.rel, int64(f.mode.Perm()), int64(len(f.data)), strings.NewReader(string(f.data)))
}
