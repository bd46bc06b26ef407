package widget

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// claudeStream is what `claude -p --output-format stream-json` prints for
// one turn with a tool call.
var claudeStream = []string{
	`{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look at the **files**."}]}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -la","description":"List files"}}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"README.md\nmain.go"}]}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"There are two files."}]}}`,
	`{"type":"result","subtype":"success","result":"There are two files.","duration_ms":12345,"num_turns":3,"total_cost_usd":0.0123}`,
}

// parseStream parses a Claude Code stream the way the session does, into
// the entries a TranscriptView is fed.
func parseStream(t *testing.T, lines []string) []Entry {
	t.Helper()
	var out []Entry
	for _, l := range lines {
		es, ok := session.ParseClaudeLine([]byte(l), time.Now())
		if !ok {
			t.Fatalf("not stream-json: %s", l)
		}
		for _, e := range es {
			out = append(out, Entry{Kind: EntryKind(e.Kind), Time: e.Time, Text: e.Text, Tool: e.Tool, ToolID: e.ToolID,
				Input: e.Input, IsError: e.IsError, CostUSD: e.CostUSD, Duration: e.Duration, Turns: e.Turns})
		}
	}
	return out
}

func TestTranscriptFoldsToolCalls(t *testing.T) {
	test.NewTempApp(t)
	v := NewTranscriptView()
	es := parseStream(t, claudeStream)
	v.Add(Entry{Kind: EntryUser, Time: time.Now(), Text: "What is here?"})
	for _, e := range es {
		v.Add(e)
	}
	// user, system, text, tool (with its result), text, result
	if v.Len() != 6 {
		t.Fatalf("%d rows, want 6", v.Len())
	}
	tr := v.tools["t1"]
	if tr == nil {
		t.Fatal("the tool call has no row")
	}
	if got := tr.Title(); got != "• Bash  ls -la" {
		t.Errorf("folded tool call %q", got)
	}
	if tr.item.Open {
		t.Error("a tool call should start folded")
	}
	tr.acc.Open(0)
	if !tr.item.Open || tr.result.Text != "README.md\nmain.go" {
		t.Errorf("opened tool call shows %q", tr.result.Text)
	}
	res := v.rows[len(v.rows)-1].obj.(*widget.Label)
	for _, want := range []string{"3 turns", "12.3s", "$0.0123"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("result row %q lacks %q", res.Text, want)
		}
	}
	if one := resultLabel(Entry{Kind: EntryResult, Turns: 1, CostUSD: 0.01}); !strings.Contains(one.Text, "1 turn ·") {
		t.Errorf("one turn's result row %q, want \"1 turn\"", one.Text)
	}
	if v.empty.Visible() {
		t.Error("the empty note shows with entries")
	}

	// A failing tool result marks the call.
	v.Add(Entry{Kind: EntryToolUse, Tool: "Read", ToolID: "t2", Input: `{"file_path":"/nope"}`})
	v.Add(Entry{Kind: EntryToolResult, ToolID: "t2", Text: "no such file", IsError: true})
	if got := v.tools["t2"].Title(); got != "× Read  /nope" {
		t.Errorf("failed tool call %q", got)
	}
	if v.tools["t2"].result.Importance != widget.DangerImportance {
		t.Error("a failed result is not shown as an error")
	}
}

func TestTranscriptIsBounded(t *testing.T) {
	test.NewTempApp(t)
	v := NewTranscriptView()
	var es []Entry
	for i := 0; i < transcriptMaxRows+50; i++ {
		es = append(es, Entry{Kind: EntrySystem, Text: "x"})
	}
	v.SetEntries(es)
	if v.Len() != transcriptMaxRows || len(v.box.Objects) != transcriptMaxRows {
		t.Errorf("%d rows (%d objects), bound %d", v.Len(), len(v.box.Objects), transcriptMaxRows)
	}
	if !v.dropped.Visible() || !strings.HasPrefix(v.dropped.Text, "50 earlier") {
		t.Errorf("dropped note %q", v.dropped.Text)
	}
}

func TestToolTitle(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"command":"go test ./...\n  -run X"}`, "Bash  go test ./... -run X"},
		{`{"file_path":"/workspace/main.go","old_string":"a"}`, "Bash  /workspace/main.go"},
		{`{"other":1}`, `Bash  {"other":1}`},
		{`not json`, "Bash  not json"},
	}
	for _, c := range cases {
		if got := toolTitle(Entry{Tool: "Bash", Input: c.in}); got != c.want {
			t.Errorf("toolTitle(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestTranscriptHoldsLongEntries: entries as long as an agent makes
// them wrap or are cut, so the transcript asks for no more width than a
// window has.
func TestTranscriptHoldsLongEntries(t *testing.T) {
	test.NewTempApp(t)
	long := strings.Repeat("x", 10000)
	v := NewTranscriptView()
	now := time.Now()
	v.Add(Entry{Kind: EntrySystem, Time: now, Text: long})
	v.Add(Entry{Kind: EntryText, Time: now, Text: "```\n" + long + "\n```\n" + long})
	v.Add(Entry{Kind: EntryThinking, Time: now, Text: long})
	v.Add(Entry{Kind: EntryToolUse, Time: now, Tool: "Bash", ToolID: "t1", Input: `{"command":"` + long + `"}`})
	v.Add(Entry{Kind: EntryToolResult, Time: now, ToolID: "t1", Text: long})
	v.Add(Entry{Kind: EntryUser, Time: now, Text: long})
	for _, tr := range v.tools {
		tr.acc.Open(0)
	}
	w := test.NewWindow(v)
	defer w.Close()
	w.Resize(fyne.NewSize(800, 600))
	if got := v.box.MinSize().Width; got > 800 {
		t.Errorf("the transcript's entries ask for %.0f points of width in an 800-point window", got)
	}
}

// TestTranscriptToolElapsed: a running tool call's line shows how long
// it has run, each tick; its result, or its turn's end without one,
// stops the clock.
func TestTranscriptToolElapsed(t *testing.T) {
	test.NewTempApp(t)
	v := NewTranscriptView()
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	v.Add(Entry{Kind: EntryToolUse, Time: t0, Tool: "Bash", ToolID: "a", Input: `{"command":"go test ./..."}`})
	v.Add(Entry{Kind: EntryToolUse, Time: t0, Tool: "Bash", ToolID: "b", Input: `{"command":"sleep 60"}`})
	v.Tick(t0.Add(42 * time.Second))
	if got, _, _ := v.Tool("a"); got != "… Bash  go test ./... · 42 s" {
		t.Errorf("after 42 s the running call reads %q", got)
	}
	v.Add(Entry{Kind: EntryToolResult, ToolID: "a", Text: "ok"})
	v.Tick(t0.Add(125 * time.Second))
	if got, _, _ := v.Tool("a"); got != "• Bash  go test ./..." {
		t.Errorf("a finished call reads %q", got)
	}
	if got, _, _ := v.Tool("b"); got != "… Bash  sleep 60 · 2 min 05 s" {
		t.Errorf("after 125 s the running call reads %q", got)
	}
	// The turn ends (an interrupt) before b's result: its clock stops.
	v.Add(Entry{Kind: EntryResult, Time: t0.Add(126 * time.Second), IsError: true})
	v.Tick(t0.Add(200 * time.Second))
	if got, _, _ := v.Tool("b"); got != "… Bash  sleep 60" {
		t.Errorf("a call whose turn ended reads %q", got)
	}
}
