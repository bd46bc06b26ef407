package session

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseClaudeLine(t *testing.T) {
	at := time.Unix(1700000000, 0)
	stream := []string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","tools":["Bash","Edit"]}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"I'll look at the tests."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command": "go test ./..."}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok  \tpkg\t0.1s\nPASS","is_error":false}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"permission denied"}],"is_error":true}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"All green."}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"duration_ms":12345,"num_turns":3,"result":"All green.","total_cost_usd":0.0123}`,
		`{"type":"stream_event","event":{}}`,
	}
	var got []Entry
	for _, l := range stream {
		es, ok := ParseClaudeLine([]byte(l), at)
		if !ok {
			t.Fatalf("line not recognised: %s", l)
		}
		got = append(got, es...)
	}
	want := []Entry{
		{Kind: EntrySystem, Text: "agent started (model claude-sonnet-4-5)"},
		{Kind: EntryText, Text: "I'll look at the tests."},
		{Kind: EntryToolUse, Tool: "Bash", ToolID: "toolu_1", Input: `{"command":"go test ./..."}`},
		{Kind: EntryToolResult, ToolID: "toolu_1", Text: "ok  \tpkg\t0.1s\nPASS"},
		{Kind: EntryToolResult, ToolID: "toolu_2", Text: "permission denied", IsError: true},
		{Kind: EntryThinking, Text: "hmm"},
		{Kind: EntryText, Text: "All green."},
		{Kind: EntryResult, Text: "All green.", CostUSD: 0.0123, Duration: 12345 * time.Millisecond, Turns: 3, Subtype: "success"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		want[i].Time = at
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if s := got[7].Summary(); s != "done: 3 turns, 12.345s, $0.0123" {
		t.Errorf("result summary %q", s)
	}
	one := Entry{Kind: EntryResult, Turns: 1, Duration: time.Second, CostUSD: 0.01}
	if s := one.Summary(); s != "done: 1 turn, 1s, $0.0100" {
		t.Errorf("one turn's summary %q", s)
	}
	if s := got[2].Summary(); !strings.HasPrefix(s, "→ Bash {") {
		t.Errorf("tool summary %q", s)
	}
}

func TestParseClaudeLineNotJSON(t *testing.T) {
	for _, l := range []string{"", "plain text", "{not json", `{"no":"type"}`, `[1,2]`} {
		if _, ok := ParseClaudeLine([]byte(l), time.Now()); ok {
			t.Errorf("%q parsed as stream-json", l)
		}
	}
	es, ok := ParseClaudeLine([]byte(`{"type":"result","subtype":"error_max_turns","is_error":false}`), time.Now())
	if !ok || len(es) != 1 || !es[0].IsError {
		t.Errorf("a non-success result is an error: %+v", es)
	}
}

func TestUserMessage(t *testing.T) {
	line := UserMessage("fix the \"bug\"\nplease")
	var v struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(line, "\n") || v.Type != "user" || v.Message.Role != "user" || v.Message.Content != "fix the \"bug\"\nplease" {
		t.Errorf("UserMessage = %s", line)
	}
}
