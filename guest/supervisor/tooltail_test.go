package supervisor

import (
	"strings"
	"testing"

	"sandbar/guest/protocol"
)

// toolEvents reads events until the agent exits and returns the
// tool:output ones, and whether each came before the agent's line "end".
func toolEvents(t *testing.T, h *host) (tool []protocol.Event, beforeEnd int) {
	t.Helper()
	ended := false
	for _, e := range h.until(protocol.EvAgentExit, "") {
		switch {
		case e.Ev == protocol.EvToolOutput:
			tool = append(tool, e)
			if !ended {
				beforeEnd++
			}
		case e.Ev == protocol.EvAgentStdout && string(e.Payload()) == "end":
			ended = true
		}
	}
	return tool, beforeEnd
}

// TestToolOutputFollowsAFile: a tool of the agent's whose stdout is a
// file has its lines sent as they are written, with its elapsed time,
// before it ends; then one event says it is done. The agent's own
// stdout (a pipe) stays agent:stdout.
func TestToolOutputFollowsAFile(t *testing.T) {
	h := newHost(t)
	out := t.TempDir() + "/tool.output"
	h.start("start", `sh -c 'for i in 1 2 3 4; do echo live $i; sleep 0.4; done' > `+out+`; echo end`, nil)
	tool, before := toolEvents(t, h)
	var text strings.Builder
	var elapsed int64
	done := 0
	for _, e := range tool {
		text.Write(e.Payload())
		elapsed = max(elapsed, e.Elapsed)
		if e.Done {
			done++
		}
		if len(e.Payload()) > protocol.MaxToolChunk {
			t.Errorf("an event carries %d bytes", len(e.Payload()))
		}
	}
	if got, want := text.String(), "live 1\nlive 2\nlive 3\nlive 4\n"; got != want {
		t.Errorf("the tool's output came as %q, want %q", got, want)
	}
	if before < 3 {
		t.Errorf("%d tool:output events came before the tool ended, want its lines as they were written: %+v", before, tool)
	}
	if done != 1 {
		t.Errorf("%d events said done, want 1: %+v", done, tool)
	}
	if elapsed < 1000 {
		t.Errorf("the longest elapsed time was %d ms for a tool that ran 1.6 s", elapsed)
	}
}

// TestToolOutputBounded: a tool that writes far faster than the rate
// has the overflow skipped and counted, never sent.
func TestToolOutputBounded(t *testing.T) {
	h := newHost(t)
	out := t.TempDir() + "/tool.output"
	h.start("start", `sh -c 'echo first; sleep 0.5; head -c 4000000 /dev/zero | tr "\0" a; sleep 1' > `+out+`; echo end`, nil)
	tool, _ := toolEvents(t, h)
	var sent, skipped int64
	for _, e := range tool {
		sent += int64(len(e.Payload()))
		skipped += e.Skipped
		if len(e.Payload()) > protocol.MaxToolChunk {
			t.Errorf("an event carries %d bytes", len(e.Payload()))
		}
	}
	if sent > 4*protocol.ToolOutputRate {
		t.Errorf("%d bytes sent of a tool that ran about a second, more than the rate allows", sent)
	}
	if skipped == 0 || sent+skipped > 4000006 {
		t.Errorf("sent %d and skipped %d of 4000006 bytes", sent, skipped)
	}
}

// TestToolOutputLeavesPipes: a tool writing into a pipe is not read (its
// reader would lose the bytes).
func TestToolOutputLeavesPipes(t *testing.T) {
	h := newHost(t)
	h.start("start", `sh -c 'echo piped; sleep 0.5' | cat; echo end`, nil)
	tool, _ := toolEvents(t, h)
	if len(tool) != 0 {
		t.Errorf("a tool writing to a pipe was followed: %+v", tool)
	}
}

// TestToolOutputSkipsBinary: a tool whose stdout is a binary file (the
// agent's own data, as `head -c … /dev/urandom > big.bin` has it) sends
// none of its bytes: its events say Binary and count them skipped.
func TestToolOutputSkipsBinary(t *testing.T) {
	h := newHost(t)
	out := t.TempDir() + "/big.bin"
	h.start("start", `sh -c 'for i in 1 2 3; do head -c 300000 /dev/urandom; sleep 0.4; done' > `+out+`; echo end`, nil)
	tool, _ := toolEvents(t, h)
	var sent, skipped int64
	binary := false
	for _, e := range tool {
		sent += int64(len(e.Payload()))
		skipped += e.Skipped
		binary = binary || e.Binary
	}
	if sent != 0 {
		t.Errorf("%d bytes of a binary file were sent as the tool's output", sent)
	}
	if !binary {
		t.Errorf("no event said the file is binary: %+v", tool)
	}
	if skipped == 0 || skipped > 900000 {
		t.Errorf("skipped %d bytes of a 900000-byte binary file", skipped)
	}
}

func TestLooksBinary(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"plain text\n", false},
		{"héllo wörld ✓ 日本語\n", false},
		{"\xa9 cut rune at the start is text, and so at the end \xe6\x97", false},
		{"a NUL\x00 inside", true},
		{strings.Repeat("ab\xff\xfe", 8), true},
		{"", false},
	} {
		if got := looksBinary([]byte(c.in)); got != c.want {
			t.Errorf("looksBinary(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
