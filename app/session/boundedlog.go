package session

import (
	"bufio"
	"fmt"
	"os"
	"unicode/utf8"
)

// Bounds of what an agent's output costs on the host's disk.
const (
	// maxLogFile bounds agent.log; past it the file becomes agent.log.1
	// (replacing an older one) and a new agent.log begins, so a session
	// keeps at most twice this much of its log.
	maxLogFile = 64 << 20
	// maxLogText bounds one line of the log, in the store, agent.log and
	// the events: the store keeps a window of 100,000 lines per session,
	// and each may be as long as the protocol joins (8 MiB). A Claude Code
	// transcript entry is parsed from the whole line first.
	maxLogText = 64 << 10
)

// boundedLog is an append-only text log of whole lines (each Write is one or
// more whole lines) that rotates once past its bound, keeping one older
// file beside it. It is not safe for concurrent use.
type boundedLog struct {
	path string
	max  int64
	f    *os.File
	w    *bufio.Writer
	size int64
	err  error // the rotation that failed: nothing more is written
}

// openBoundedLog opens path for appending, going on from the size it has.
func openBoundedLog(path string, max int64) (*boundedLog, error) {
	l := &boundedLog{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *boundedLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	l.f, l.w, l.size = f, bufio.NewWriterSize(f, 64<<10), fi.Size()
	return nil
}

// Write appends p, first rotating the file when p would take it past its
// bound. After a rotation fails it writes nothing more and returns why.
func (l *boundedLog) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			l.err = fmt.Errorf("rotate %s: %w: the log stops here; the store keeps the newest lines", l.path, err)
			return 0, l.err
		}
	}
	n, err := l.w.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the full file to path.1 and starts an empty one.
func (l *boundedLog) rotate() error {
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return err
	}
	return l.open()
}

// Flush writes what is buffered to the file.
func (l *boundedLog) Flush() error {
	if l.err != nil {
		return nil
	}
	return l.w.Flush()
}

// Close flushes and closes the file.
func (l *boundedLog) Close() error {
	if l.err != nil {
		return nil
	}
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// boundLogText cuts text to maxLogText bytes, before a character the
// bound splits, and says how much was dropped.
func boundLogText(text string) string {
	if len(text) <= maxLogText {
		return text
	}
	cut := maxLogText
	for cut > maxLogText-utf8.UTFMax && cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … [line truncated: %d bytes dropped]", text[:cut], len(text)-cut)
}
