package protocol

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// heapInUse is the live heap after a collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestLineJoinerBoundsAHostileLine: a guest that sends 256 MiB of one
// line, in pieces that all say more follows, makes the host hold at most
// about MaxJoinedLine, not the whole line; when the line ends it comes
// back as its first MaxJoinedLine bytes and a note of what was dropped,
// and the next line is whole again.
func TestLineJoinerBoundsAHostileLine(t *testing.T) {
	const piece, total = 64 << 10, 256 << 20
	ev := Event{Ev: EvAgentStdout, More: true, Data: strings.Repeat("x", piece)}
	var j LineJoiner
	before := heapInUse()
	var peak uint64
	for i := range total / piece {
		if _, ok := j.Add(ev); ok {
			t.Fatal("a piece marked more returned a line")
		}
		if i%512 == 0 {
			peak = max(peak, heapInUse())
		}
	}
	peak = max(peak, heapInUse())
	if grew := int64(peak) - int64(before); grew > 4*MaxJoinedLine {
		t.Errorf("the live heap grew by %d MiB while %d MiB of one line came in; want at most %d MiB",
			grew>>20, total>>20, 4*MaxJoinedLine>>20)
	}
	if p := j.Pending(); p > MaxJoinedLine {
		t.Errorf("%d bytes pending, more than MaxJoinedLine (%d)", p, MaxJoinedLine)
	}
	line, ok := j.Add(Event{Ev: EvAgentStdout, Data: "end"})
	if !ok {
		t.Fatal("the last piece returned no line")
	}
	dropped := total + len("end") - MaxJoinedLine
	suffix := fmt.Sprintf(" … [line truncated: %d bytes dropped]", dropped)
	if !bytes.HasSuffix(line, []byte(suffix)) {
		t.Errorf("the truncated line ends %q, want %q", line[max(0, len(line)-80):], suffix)
	}
	if head := line[:len(line)-len(suffix)]; len(head) != MaxJoinedLine || len(bytes.Trim(head, "x")) != 0 {
		t.Errorf("kept %d bytes before the note, want the line's first %d", len(head), MaxJoinedLine)
	}
	next, ok := j.Add(Event{Ev: EvAgentStdout, Data: "short"})
	if !ok || string(next) != "short" {
		t.Errorf("the line after a truncated one: %q, %v", next, ok)
	}
}

// TestLineJoinerCutsOnARune: a truncated text line is cut before a
// multi-byte character the limit splits, so the kept part stays valid
// UTF-8, and the bytes of that character are counted as dropped.
func TestLineJoinerCutsOnARune(t *testing.T) {
	var j LineJoiner
	j.Add(Event{Ev: EvAgentStderr, More: true, Data: strings.Repeat("a", MaxJoinedLine-1)})
	line, ok := j.Add(Event{Ev: EvAgentStderr, Data: "ü and more"})
	if !ok {
		t.Fatal("no line")
	}
	want := strings.Repeat("a", MaxJoinedLine-1) + fmt.Sprintf(" … [line truncated: %d bytes dropped]", len("ü and more"))
	if string(line) != want {
		t.Errorf("line ends %q, want it to end %q", line[len(line)-60:], want[len(want)-60:])
	}
	if !utf8.Valid(line) {
		t.Error("the truncated line is not valid UTF-8")
	}
}

// TestLineJoinerKeepsStreamsApart: a long stdout line does not truncate
// or mix with the stderr line between its pieces.
func TestLineJoinerKeepsStreamsApart(t *testing.T) {
	var j LineJoiner
	j.Add(Event{Ev: EvAgentStdout, More: true, Data: "out "})
	if l, ok := j.Add(Event{Ev: EvAgentStderr, Data: "err"}); !ok || string(l) != "err" {
		t.Errorf("stderr line: %q, %v", l, ok)
	}
	if l, ok := j.Add(Event{Ev: EvAgentStdout, Data: "line"}); !ok || string(l) != "out line" {
		t.Errorf("stdout line: %q, %v", l, ok)
	}
}
