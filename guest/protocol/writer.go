package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
	"unicode/utf8"
)

// Writer encodes messages onto a stream, one line each. It is safe for
// concurrent use; each line is written with a single Write call and lines
// never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	seq uint64
	buf bytes.Buffer
	enc *json.Encoder
	err error // sticky: after a failed write the stream is unusable
	now func() time.Time
	max int
}

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer {
	return newWriterMax(w, MaxLine)
}

func newWriterMax(w io.Writer, max int) *Writer {
	wr := &Writer{w: w, now: time.Now, max: max}
	wr.enc = json.NewEncoder(&wr.buf)
	wr.enc.SetEscapeHTML(false)
	return wr
}

// Send assigns ev its Seq and TS, encodes it and writes it. An output
// event that does not fit in one line is sent as several events (see the
// package comment); any other event that does not fit is an error wrapping
// ErrTooLong. After a write error every later call returns that error.
func (w *Writer) Send(ev Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	ev.Seq, ev.TS = w.seq+1, w.now().UnixMilli()
	if err := w.encode(ev); err != nil {
		return err
	}
	if w.buf.Len() <= w.max {
		return w.flush()
	}
	if !IsData(ev.Ev) {
		return fmt.Errorf("send %s: %w (%d bytes): shorten its text", ev.Ev, ErrTooLong, w.buf.Len())
	}
	return w.sendSplit(ev)
}

// SendCommand encodes c and writes it. A command longer than MaxLine is an
// error wrapping ErrTooLong: the host must shorten it (a chat text, say).
func (w *Writer) SendCommand(c Command) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.encode(c); err != nil {
		return err
	}
	if w.buf.Len() > w.max {
		return fmt.Errorf("send %s: %w (%d bytes): send less text in one command", c.Cmd, ErrTooLong, w.buf.Len())
	}
	return w.flush()
}

func (w *Writer) encode(v any) error {
	w.buf.Reset()
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("encode protocol message: %w", err)
	}
	return nil
}

func (w *Writer) flush() error {
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		w.err = fmt.Errorf("write protocol line: %w", err)
		return w.err
	}
	if w.buf.Cap() > 4*w.max {
		w.buf = bytes.Buffer{} // let one huge event's buffer go
	}
	w.seq++
	return nil
}

// sendSplit sends ev's payload in pieces that each fit in a line.
func (w *Writer) sendSplit(ev Event) error {
	payload, binary := ev.Payload(), ev.B64 != nil
	lastMore := ev.More
	agent := ev.Ev == EvAgentStdout || ev.Ev == EvAgentStderr

	// Measure the fixed part with the widest numbers and flags it can have.
	probe := ev
	probe.Data, probe.B64, probe.More = "", nil, true
	probe.Seq, probe.TS = math.MaxUint64, math.MaxInt64
	if err := w.encode(probe); err != nil {
		return err
	}
	budget := w.max - w.buf.Len() - len(`,"data":""`) - len(`,"b64":""`) - 8
	if budget < 64 {
		return fmt.Errorf("send %s: %w: its fields other than data leave no room", ev.Ev, ErrTooLong)
	}
	for len(payload) > 0 {
		var n int
		if binary {
			n = min(len(payload), budget/4*3)
		} else {
			n = jsonPrefix(payload, budget)
		}
		piece := ev
		if binary {
			piece.Data, piece.B64 = "", payload[:n]
		} else {
			piece.Data, piece.B64 = string(payload[:n]), nil
		}
		payload = payload[n:]
		piece.More = false
		if agent {
			piece.More = len(payload) > 0 || lastMore
		}
		piece.Seq, piece.TS = w.seq+1, w.now().UnixMilli()
		if err := w.encode(piece); err != nil {
			return err
		}
		if w.buf.Len() > w.max {
			return errors.New("protocol: internal error: a split piece is still too long")
		}
		if err := w.flush(); err != nil {
			return err
		}
	}
	return nil
}

// jsonPrefix returns the length of the longest prefix of the valid UTF-8
// text p, cut at a rune boundary, whose JSON string encoding (HTML escaping
// off) takes at most budget bytes. It overestimates escapes, never under.
func jsonPrefix(p []byte, budget int) int {
	used, i := 0, 0
	for i < len(p) {
		r, size := utf8.DecodeRune(p[i:])
		var cost int
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			cost = 2
		case r < 0x20, r == '\u2028', r == '\u2029', r == utf8.RuneError && size == 1:
			cost = 6
		default:
			cost = size
		}
		if used+cost > budget {
			break
		}
		used += cost
		i += size
	}
	if i == 0 && len(p) > 0 {
		_, i = utf8.DecodeRune(p) // always make progress
	}
	return i
}
