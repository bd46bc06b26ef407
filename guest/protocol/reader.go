package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Reader decodes messages from a stream, one line each. Blank lines are
// skipped. A line that is too long, not JSON, or not a known message is
// reported as a *LineError and skipped, so the next call reads on; only
// I/O errors (io.EOF at the end) are final. A Reader is not safe for
// concurrent use.
type Reader struct {
	br      *bufio.Reader
	line    []byte
	n       int
	pending error // I/O error met after the last, unterminated line
	max     int
}

// NewReader returns a Reader from r. It never holds more than MaxLine
// bytes of one line, however long the line is.
func NewReader(r io.Reader) *Reader {
	return newReaderMax(r, MaxLine)
}

func newReaderMax(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadCommand returns the next command.
func (r *Reader) ReadCommand() (Command, error) {
	line, err := r.next()
	if err != nil {
		return Command{}, err
	}
	var c Command
	if err := r.decode(line, &c); err != nil {
		return Command{}, err
	}
	if err := c.Validate(); err != nil {
		return Command{}, &LineError{Line: r.n, Len: len(line), Cmd: c.Cmd, ID: c.ID, Err: err}
	}
	return c, nil
}

// ReadEvent returns the next event.
func (r *Reader) ReadEvent() (Event, error) {
	line, err := r.next()
	if err != nil {
		return Event{}, err
	}
	var e Event
	if err := r.decode(line, &e); err != nil {
		return Event{}, err
	}
	if err := e.Validate(); err != nil {
		return Event{}, &LineError{Line: r.n, Len: len(line), Cmd: e.Ev, ID: e.ID, Err: err}
	}
	return e, nil
}

func (r *Reader) decode(line []byte, v any) error {
	err := json.Unmarshal(line, v)
	if err == nil {
		return nil
	}
	// Salvage the name and id, so the answer can say which command failed.
	var probe struct {
		Cmd string `json:"cmd"`
		Ev  string `json:"ev"`
		ID  string `json:"id"`
	}
	_ = json.Unmarshal(line, &probe)
	name := probe.Cmd
	if name == "" {
		name = probe.Ev
	}
	return &LineError{Line: r.n, Len: len(line), Cmd: name, ID: probe.ID,
		Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
}

// next returns the next non-blank line, trimmed. The slice is valid until
// the next call.
func (r *Reader) next() ([]byte, error) {
	for {
		if r.pending != nil {
			return nil, r.pending
		}
		r.line = r.line[:0]
		total, tooLong := 0, false
		for {
			chunk, err := r.br.ReadSlice('\n')
			total += len(chunk)
			switch {
			case tooLong:
			case len(r.line)+len(chunk) > r.max:
				tooLong, r.line = true, r.line[:0]
			default:
				r.line = append(r.line, chunk...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				if total == 0 {
					return nil, err
				}
				r.pending = err // hand out the unterminated last line first
			}
			break
		}
		r.n++
		if tooLong {
			return nil, &LineError{Line: r.n, Len: total, Err: ErrTooLong}
		}
		if line := bytes.TrimSpace(r.line); len(line) > 0 {
			return line, nil
		}
	}
}
