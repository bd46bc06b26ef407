package session

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readRecorded parses a file of recorded Claude Code lines.
func readRecorded(t *testing.T, name string) []Entry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		entries, ok := ParseClaudeLine(sc.Bytes(), time.Unix(0, 0))
		if !ok {
			t.Fatalf("%s: a line did not parse: %s", name, sc.Text())
		}
		out = append(out, entries...)
	}
	return out
}

// TestClaudeAPITrouble reads the real binary's lines for each way its
// model API fails: every retry is an entry in words with its count, the
// synthetic assistant message is not shown as the agent's text, and the
// result is an error whose reason says what happened and what to do.
func TestClaudeAPITrouble(t *testing.T) {
	for _, tt := range []struct {
		file    string
		retries int
		problem APIProblem
		retry   string // the first retry's text
		reason  string // FailureReason of the result
		status  int
	}{
		{"api-401.jsonl", 2, APIAuth, "The API key was refused — retry 1/2", "The API key was refused — set it in Settings", 401},
		{"api-403.jsonl", 0, APIForbidden, "", "The API refused access (403) — check the key's permissions, then restart the session", 403},
		{"api-429.jsonl", 2, APIRateLimited, "Rate limited by the API — retry 1/2", "Rate limited by the API — wait a while, then restart the session", 429},
		{"api-529.jsonl", 2, APIOverloaded, "The Anthropic API is overloaded — retry 1/2", "The Anthropic API is overloaded — restart the session in a moment", 529},
		{"api-500.jsonl", 2, APIServer, "The Anthropic API failed (HTTP 500) — retry 1/2", "The Anthropic API failed (HTTP 500) — restart the session in a moment", 500},
		{"api-unreachable.jsonl", 2, APIUnreachable, "Can't reach the Anthropic API — retry 1/2", "Can't reach the Anthropic API — check the network, then restart the session", 0},
	} {
		t.Run(tt.file, func(t *testing.T) {
			entries := readRecorded(t, tt.file)
			var retries []Entry
			var result *Entry
			for i, e := range entries {
				switch e.Kind {
				case EntryRetry:
					retries = append(retries, e)
				case EntryResult:
					result = &entries[i]
				case EntryText:
					t.Errorf("the API's error shows as the agent's text: %q", e.Text)
				}
			}
			if len(retries) != tt.retries {
				t.Fatalf("%d retry entries, want %d: %+v", len(retries), tt.retries, entries)
			}
			if tt.retries > 0 {
				r := retries[0]
				if r.Text != tt.retry || r.Attempt != 1 || r.MaxRetries != 2 || APIProblem(r.APIError) != tt.problem || r.Status != tt.status {
					t.Errorf("first retry: %+v; want %q", r, tt.retry)
				}
				if last := retries[len(retries)-1]; last.Attempt != 2 || !strings.HasSuffix(last.Text, "retry 2/2") {
					t.Errorf("last retry: %+v", last)
				}
			}
			if result == nil {
				t.Fatal("no result entry")
			}
			if !result.IsError || APIProblem(result.APIError) != tt.problem || result.Status != tt.status {
				t.Errorf("result: %+v; want an error of %s, status %d", *result, tt.problem, tt.status)
			}
			if got := FailureReason(*result); got != tt.reason {
				t.Errorf("failure reason %q, want %q", got, tt.reason)
			}
			if got := turnOf(*result); got.Code != 1 || got.Summary != "error: "+lowerFirst(tt.reason) {
				t.Errorf("turn %+v", got)
			}
		})
	}
}

// TestClaudeResultErrors: results that fail for reasons other than the
// API say so in words; a success stays a success.
func TestClaudeResultErrors(t *testing.T) {
	for _, tt := range []struct{ line, reason string }{
		{`{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":9}`, "The agent stopped at its limit of turns — restart the session to go on"},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1}`, "The agent's turn ended with an error"},
		{`{"type":"result","subtype":"success","is_error":true,"result":"Something odd\nmore","num_turns":1}`, "The agent's turn ended with an error: Something odd …"},
		// A newer agent's field of another type loses nothing else.
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":"401","api_error_type":{"x":1},"result":"r"}`, "The agent's turn ended with an error: r"},
	} {
		entries, ok := ParseClaudeLine([]byte(tt.line), time.Now())
		if !ok || len(entries) != 1 || !entries[0].IsError {
			t.Fatalf("%s: %v %+v", tt.line, ok, entries)
		}
		if got := FailureReason(entries[0]); got != tt.reason {
			t.Errorf("%s: reason %q, want %q", tt.line, got, tt.reason)
		}
	}
	entries, _ := ParseClaudeLine([]byte(`{"type":"result","subtype":"success","is_error":false,"num_turns":1}`), time.Now())
	if len(entries) != 1 || entries[0].IsError || entries[0].Problem != "" {
		t.Errorf("a success: %+v", entries)
	}
	// A retry whose fields are odd still shows.
	entries, ok := ParseClaudeLine([]byte(`{"type":"system","subtype":"api_retry","attempt":"x","error_status":null,"error":{"a":1}}`), time.Now())
	if !ok || len(entries) != 1 || entries[0].Kind != EntryRetry || entries[0].Text != "Can't reach the Anthropic API — retry 0" {
		t.Errorf("an odd retry: %v %+v", ok, entries)
	}
}
