// Package enginelog is where Sandbar's own log lines go (the engine's
// engine.log, or a terminal): a writer that loses nothing silently when
// the disk is full. A line that cannot be written is held, within a bound,
// and written before the next line once space is back; what the bound
// cannot hold is counted, and the count is said in the log at that point.
//
// It is not the sessions' logs (app/session keeps those) and it does not
// format lines (log/slog does).
package enginelog

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultHold bounds the bytes of lines held while they cannot be written.
const DefaultHold = 256 << 10

// Writer writes whole log lines (one per Write, as slog's handlers do) to
// W, holding those W refuses.
type Writer struct {
	W io.Writer
	// Hold bounds the bytes held; 0 means DefaultHold.
	Hold int
	// Now stamps the count's line; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	held    [][]byte
	size    int
	dropped int
	since   time.Time
}

// Write writes p after the lines held before it; if W refuses, p is held
// too (or counted, past the bound) and Write still reports success, so
// that a logger never fails its caller for want of disk.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flushLocked() {
		if _, err := w.W.Write(p); err == nil {
			return len(p), nil
		}
	}
	w.holdLocked(p)
	return len(p), nil
}

// Held reports how many lines are held and how many were dropped
// uncounted in the log so far.
func (w *Writer) Held() (held, dropped int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held), w.dropped
}

// flushLocked writes the count and the held lines; it reports whether
// all of them went.
func (w *Writer) flushLocked() bool {
	if w.dropped > 0 {
		line := fmt.Sprintf("time=%s level=WARN msg=\"log lines lost: they could not be written (disk full?) and were more than Sandbar holds\" lines=%d since=%s\n",
			w.now().Format(time.RFC3339), w.dropped, w.since.Format(time.RFC3339))
		if _, err := w.W.Write([]byte(line)); err != nil {
			return false
		}
		w.dropped = 0
	}
	for len(w.held) > 0 {
		if _, err := w.W.Write(w.held[0]); err != nil {
			return false
		}
		w.size -= len(w.held[0])
		w.held[0] = nil
		w.held = w.held[1:]
	}
	w.held = nil
	return true
}

func (w *Writer) holdLocked(p []byte) {
	if len(w.held) == 0 && w.dropped == 0 {
		w.since = w.now()
	}
	limit := w.Hold
	if limit <= 0 {
		limit = DefaultHold
	}
	w.held = append(w.held, append([]byte(nil), p...))
	w.size += len(p)
	for w.size > limit && len(w.held) > 0 {
		w.size -= len(w.held[0])
		w.held[0] = nil
		w.held = w.held[1:]
		w.dropped++
	}
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
