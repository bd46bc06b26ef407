package session

import (
	"strings"
	"time"
	"unicode/utf8"
)

// A running tool's live output: what the guest's tool:output events
// carry (the files the agent's tools write to, see guest/supervisor
// tooltail.go), kept as the last LiveLines lines of each tool and
// published as EventLive while the tool runs. It is transient and never
// stored: the tool's result (Claude Code's tool_result, kept in the log
// and the transcript) replaces it when the tool ends, and a plain
// agent's tools' files stay in the VM. Storing it would double what the
// log keeps of every command, written at the agent's pace, for a view
// that matters only while the command runs.

// Bounds of the live view: lines kept of each running tool, runes of a
// line, and the tools followed at once.
const (
	LiveLines   = 12
	LiveLineMax = 240
	maxLive     = 16
)

// LiveOutput is one running tool's output as EventLive carries it.
type LiveOutput struct {
	// PID identifies the tool in the guest (the oldest process writing
	// its output); 0 for Claude Code's own progress report of a tool
	// whose output is not followed.
	PID int `json:"pid"`
	// Tool and Input are the running Claude Code tool call (its name and
	// compact JSON input), when one is known.
	Tool  string `json:"tool,omitempty"`
	Input string `json:"input,omitempty"`
	// Elapsed is how long the tool has run.
	Elapsed time.Duration `json:"elapsed"`
	// Lines are the last lines of its output, oldest first: no control
	// characters or escape sequences, at most LiveLineMax runes each,
	// redacted. The last one may be still being written (Partial).
	Lines   []string `json:"lines,omitempty"`
	Partial bool     `json:"partial,omitempty"`
	// Total counts the lines the tool has ended: the last ended line of
	// Lines is line Total, so a follower prints the lines past those it
	// printed.
	Total int64 `json:"total"`
	// Skipped counts the bytes left out (the tool wrote faster than the
	// live view's rate).
	Skipped int64 `json:"skipped,omitempty"`
	// Binary says the tool writes binary data: none of it is shown,
	// and Skipped counts it.
	Binary bool `json:"binary,omitempty"`
	// Done says the tool ended: its live view goes.
	Done bool `json:"done,omitempty"`
}

// liveTail is the bounded tail of one tool's output, with terminal
// control sequences taken out and carriage returns honoured (a progress
// bar shows its last state).
type liveTail struct {
	lines   []string
	cur     []byte // the line being written
	cr      bool   // a carriage return came: the next text starts the line afresh
	total   int64
	skipped int64
	binary  bool
	esc     escState
}

type escState uint8

const (
	escNone   escState = iota
	escStart           // after ESC
	escCSI             // ESC [ … final byte
	escString          // OSC, DCS, SOS, PM, APC: … BEL or ESC \
	escStrEsc          // ESC inside a string
)

// curMax bounds the bytes kept of the line being written.
const curMax = LiveLineMax * 4

func (t *liveTail) write(p []byte) {
	for _, c := range p {
		switch t.esc {
		case escStart:
			switch c {
			case '[':
				t.esc = escCSI
			case ']', 'P', 'X', '^', '_':
				t.esc = escString
			default:
				t.esc = escNone
			}
			continue
		case escCSI:
			if c >= 0x40 && c <= 0x7e {
				t.esc = escNone
			}
			continue
		case escString:
			switch c {
			case 0x07:
				t.esc = escNone
			case 0x1b:
				t.esc = escStrEsc
			}
			continue
		case escStrEsc:
			t.esc = escString
			if c == '\\' {
				t.esc = escNone
			}
			continue
		}
		switch {
		case c == 0x1b:
			t.esc = escStart
		case c == '\n':
			t.endLine()
		case c == '\r':
			t.cr = true
		case c == '\t':
			t.add(' ')
		case c < 0x20 || c == 0x7f:
			// Other controls (bell, backspace, ...) are dropped.
		default:
			t.add(c)
		}
	}
}

func (t *liveTail) add(c byte) {
	if t.cr {
		t.cur, t.cr = t.cur[:0], false
	}
	if len(t.cur) < curMax {
		t.cur = append(t.cur, c)
	}
}

func (t *liveTail) endLine() {
	t.lines = append(t.lines, cleanLine(t.cur))
	if len(t.lines) > LiveLines {
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-LiveLines:]...)
	}
	t.cur, t.cr = t.cur[:0], false
	t.total++
}

// cleanLine is b as valid UTF-8 without C1 controls, at most LiveLineMax
// runes (the last then "…").
func cleanLine(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r >= 0x80 && r <= 0x9f {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > LiveLineMax {
		s = string([]rune(s)[:LiveLineMax-1]) + "…"
	}
	return s
}

// snapshot is the tail as Live's Lines, Partial and Total, each line
// passed through redact.
func (t *liveTail) snapshot(redact func(string) string) (lines []string, partial bool, total int64) {
	lines = make([]string, 0, len(t.lines)+1)
	for _, l := range t.lines {
		lines = append(lines, redact(l))
	}
	if len(t.cur) > 0 {
		if len(lines) == LiveLines {
			lines = lines[1:]
		}
		lines = append(lines, redact(cleanLine(t.cur)))
		partial = true
	}
	return lines, partial, t.total
}
