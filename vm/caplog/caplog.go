// Package caplog writes an append-only log whose size on disk is capped:
// a file and one older copy of it (name.1), which together hold at most
// the cap (plus one write). The newest output is kept and the oldest
// goes first. Once output has been dropped, each new file begins with a
// marker the caller chooses, so a reader of the files can say "earlier
// output trimmed".
//
// It serves the VM's console (vm/qemu, vm/vz), the session's agent log
// and its transcript (app/session). It does not parse what it writes,
// and it is not safe for concurrent use.
package caplog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Older is the name of a log's older copy.
func Older(path string) string { return path + ".1" }

// Remove deletes a log and its older copy; missing ones are no error.
func Remove(path string) error {
	var errs []error
	for _, p := range []string{path, Older(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// File is an open capped log. Writes are appended to path; once path
// holds half the cap, it becomes path.1 (replacing an older one) and a
// new path begins. A single Write is never split across the two files,
// so a caller that writes whole lines keeps its lines whole.
type File struct {
	path   string
	half   int64
	marker []byte
	buf    int
	f      *os.File
	w      *bufio.Writer // nil when unbuffered
	size   int64
	err    error // the rotation that failed: nothing more is written
}

// Open opens path for appending, going on from the size it has, capped
// at max bytes together with path.1. marker (may be empty) begins each
// file started after output was dropped. buf > 0 buffers writes that
// much (Flush writes them out); 0 writes each at once.
func Open(path string, max int64, marker []byte, buf int) (*File, error) {
	if max < 2 {
		return nil, fmt.Errorf("open %s: a cap of %d bytes is too small", path, max)
	}
	l := &File{path: path, half: max / 2, marker: marker, buf: buf}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	l.f, l.size = f, fi.Size()
	l.w = nil
	if l.buf > 0 {
		l.w = bufio.NewWriterSize(f, l.buf)
	}
	return nil
}

func (l *File) out() io.Writer {
	if l.w != nil {
		return l.w
	}
	return l.f
}

// Write appends p, first rotating the file when p would take it past
// half the cap. After a rotation fails it writes nothing more and
// returns why.
func (l *File) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.size > 0 && l.size+int64(len(p)) > l.half {
		if err := l.rotate(); err != nil {
			l.err = fmt.Errorf("rotate %s: %w: the log stops here", l.path, err)
			return 0, l.err
		}
	}
	n, err := l.out().Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the full file to path.1 and starts an empty one, which
// begins with the marker when an older path.1 was dropped.
func (l *File) rotate() error {
	var err error
	if l.w != nil {
		err = l.w.Flush()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(Older(l.path))
	dropped := statErr == nil
	if err := os.Rename(l.path, Older(l.path)); err != nil {
		return err
	}
	if err := l.open(); err != nil {
		return err
	}
	if dropped && len(l.marker) > 0 {
		n, err := l.out().Write(l.marker)
		l.size += int64(n)
		return err
	}
	return nil
}

// Flush writes what is buffered to the file.
func (l *File) Flush() error {
	if l.err != nil || l.w == nil {
		return nil
	}
	return l.w.Flush()
}

// Close flushes and closes the file.
func (l *File) Close() error {
	if l.err != nil {
		return nil
	}
	var err error
	if l.w != nil {
		err = l.w.Flush()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Drain copies r into l until r ends, and closes l. A failed write does
// not stop it: what follows is read and dropped, so the writer at r's
// other end (a VM's console) is never held up by the log. It returns the
// first write error, if any.
func Drain(r io.Reader, l *File) error {
	buf := make([]byte, 32<<10)
	var werr error
	for {
		n, err := r.Read(buf)
		if n > 0 && werr == nil {
			if _, werr = l.Write(buf[:n]); werr == nil {
				werr = l.Flush()
			}
		}
		if err != nil {
			if cerr := l.Close(); werr == nil {
				werr = cerr
			}
			return werr
		}
	}
}
