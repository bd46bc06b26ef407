package protocol

import (
	"fmt"
	"unicode/utf8"
)

// MaxJoinedLine bounds one agent output line as LineJoiner returns it,
// before the truncation note: the guest is hostile, and a line that never
// ends must not grow the host's memory without bound. It is 8 MiB, not
// less, because one line of Claude Code's stream-json may carry an image
// (the Messages API takes up to 5 MB, about 6.7 MB in base64), and a
// truncated line no longer parses as a transcript entry.
const MaxJoinedLine = 8 << 20

// LineJoiner reassembles agent output lines that the guest split into
// several events. The zero value is ready to use. It keeps stdout and
// stderr apart; it is not safe for concurrent use.
//
// It holds at most MaxJoinedLine bytes of a line per stream: the rest of
// a longer line is dropped, and the line comes back as its first bytes
// followed by " … [line truncated: N bytes dropped]".
type LineJoiner struct {
	partial map[string]*pendingLine
}

// pendingLine is the part of a line kept so far and how much was dropped.
type pendingLine struct {
	buf     []byte
	dropped int64
}

// Add feeds one event. For the last piece of an agent:stdout or
// agent:stderr line it returns the whole line (without its newline, and
// truncated as above) and true; for an earlier piece, or any other event,
// it returns nil and false.
func (j *LineJoiner) Add(ev Event) ([]byte, bool) {
	if ev.Ev != EvAgentStdout && ev.Ev != EvAgentStderr {
		return nil, false
	}
	if j.partial == nil {
		j.partial = make(map[string]*pendingLine)
	}
	p := j.partial[ev.Ev]
	if p == nil {
		p = &pendingLine{}
		j.partial[ev.Ev] = p
	}
	// Data is appended as a string so no copy of each piece is made.
	if ev.B64 != nil {
		keep(p, ev.B64)
	} else {
		keep(p, ev.Data)
	}
	if ev.More {
		return nil, false
	}
	delete(j.partial, ev.Ev)
	if p.dropped > 0 {
		return fmt.Appendf(p.buf, " … [line truncated: %d bytes dropped]", p.dropped), true
	}
	if p.buf == nil {
		return []byte{}, true
	}
	return p.buf, true
}

// keep adds as much of piece to p as fits under MaxJoinedLine and counts
// the rest as dropped. Where the cut splits a UTF-8 character, the
// character's first bytes are dropped too, so a text line stays text.
func keep[S ~string | ~[]byte](p *pendingLine, piece S) {
	room := MaxJoinedLine - len(p.buf)
	switch {
	case p.dropped > 0:
		p.dropped += int64(len(piece))
		return
	case len(piece) <= room:
		p.buf = append(p.buf, piece...)
		return
	}
	p.buf = append(p.buf, piece[:room]...)
	p.dropped = int64(len(piece) - room)
	i := len(p.buf) - 1
	for i > 0 && i > len(p.buf)-utf8.UTFMax && !utf8.RuneStart(p.buf[i]) {
		i--
	}
	if i >= 0 && !utf8.FullRune(p.buf[i:]) {
		p.dropped += int64(len(p.buf) - i)
		p.buf = p.buf[:i]
	}
}

// Pending reports how many bytes wait for the rest of their line.
func (j *LineJoiner) Pending() int {
	n := 0
	for _, p := range j.partial {
		n += len(p.buf)
	}
	return n
}
