package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

// claudeStandIn writes a stand-in for Claude Code that answers each
// message with the recorded lines of file (testdata/claude), and returns
// the PATH that finds it first.
func claudeStandIn(t *testing.T, file string) string {
	t.Helper()
	lines, err := os.ReadFile(filepath.Join("testdata", "claude", file))
	if err != nil {
		t.Fatal(err)
	}
	return claudeStandInLines(t, string(lines))
}

// claudeStandInLines is claudeStandIn with the lines given.
func claudeStandInLines(t *testing.T, lines string) string {
	t.Helper()
	bin := t.TempDir()
	for d := bin; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the agent may run as another user
	}
	if err := os.WriteFile(filepath.Join(bin, "lines"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each line with a pause, so the retries show one after another;
	// then the agent waits for the next message, as Claude Code does.
	script := "#!/bin/sh\necho '{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"claude-test\"}'\n" +
		"while read msg; do\n  while IFS= read -r l; do echo \"$l\"; sleep 0.2; done < " + filepath.Join(bin, "lines") + "\ndone\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + ":/usr/local/bin:/usr/bin:/bin"
}

// TestTurnWithAPIErrorFailsSession: a Claude Code session whose API
// refuses the key shows each retry as its activity in words, then fails
// with the reason a person can act on, and its transcript holds the
// retries and the failed result, not raw JSON.
func TestTurnWithAPIErrorFailsSession(t *testing.T) {
	path := claudeStandIn(t, "api-401.jsonl")
	f := newFixtureWith(t, func(c *Config) {
		c.Secrets = mapSecrets{"ANTHROPIC_API_KEY": secretValue, "PATH": path}
	})
	ctx := context.Background()
	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	if err := f.m.SetProjectSecrets(ctx, f.repo, []string{"PATH"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	events := f.m.Subscribe(wctx, "")
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var retrying []string
	var final store.Session
	for final.ID == "" {
		select {
		case ev := <-events:
			if ev.Session != s.ID || ev.Kind != EventState {
				continue
			}
			if ev.State == StateRunning && ev.Activity == ActivityRetrying {
				retrying = append(retrying, ev.Reason)
			}
			if ev.State == StateFailed || ev.State == StateStopped {
				final, _ = f.m.Get(ctx, s.ID)
			}
		case <-wctx.Done():
			cur, _ := f.m.Get(ctx, s.ID)
			t.Fatalf("the session did not end within a minute: %s/%s %q", cur.State, cur.Activity, cur.Reason)
		}
	}
	if want := []string{"The API key was refused — retry 1/2", "The API key was refused — retry 2/2"}; strings.Join(retrying, "|") != strings.Join(want, "|") {
		t.Errorf("retrying activity said %q, want %q", retrying, want)
	}
	if final.State != StateFailed || final.Reason != "The API key was refused — set it in Settings" {
		t.Errorf("the session ended %s: %q; want failed: The API key was refused — set it in Settings", final.State, final.Reason)
	}
	tr, err := f.m.Transcript(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range tr {
		kinds = append(kinds, string(e.Kind))
		if strings.Contains(e.Text, "{") {
			t.Errorf("a transcript entry holds raw JSON: %+v", e)
		}
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "api_retry api_retry result") {
		t.Errorf("transcript kinds %q; want the two retries and the result", got)
	}
	if last := tr[len(tr)-1]; last.Kind != EntryResult || !last.IsError || last.Problem != "The API key was refused" {
		t.Errorf("the transcript's last entry: %+v", last)
	}
}

// TestRetryThenSuccessWorksAgain: after retries, the agent's next output
// puts the session back to working, and a successful result waits for
// the person.
func TestRetryThenSuccessWorksAgain(t *testing.T) {
	lines := `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":524,"error_status":529,"error":"overloaded"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Hello."}]}}
{"type":"result","subtype":"success","is_error":false,"result":"Hello.","num_turns":1,"total_cost_usd":0.001}
`
	path := claudeStandInLines(t, lines)
	f := newFixtureWith(t, func(c *Config) {
		c.Secrets = mapSecrets{"ANTHROPIC_API_KEY": secretValue, "PATH": path}
	})
	ctx := context.Background()
	f.m.AddProject(ctx, f.repo)
	if err := f.m.SetProjectSecrets(ctx, f.repo, []string{"PATH"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	events := f.m.Subscribe(wctx, "")
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		select {
		case ev := <-events:
			if ev.Session != s.ID || ev.Kind != EventState || ev.State != StateRunning {
				continue
			}
			seen = append(seen, ev.Activity+": "+ev.Reason)
			if ev.Activity != ActivityWaiting {
				continue
			}
			want := "retrying: The Anthropic API is overloaded — retry 1/10|working: working|waiting: waiting for your message: done"
			if got := strings.Join(seen, "|"); !strings.Contains(got, want) {
				t.Errorf("the session went %q; want %q", got, want)
			}
			return
		case <-wctx.Done():
			t.Fatalf("the turn did not end within a minute; the session went %q", seen)
		}
	}
}
