//go:build linux

package tests

import (
	"net"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/tests/anthropictest"
)

// TestClaudeCodeKeyRefusedFailsSession runs the real Claude Code binary
// in a session VM against a scripted Messages API that refuses every
// request with 401, as the API does a wrong key: the agent retries (one
// retry, set through CLAUDE_CODE_MAX_RETRIES, to keep it short), the
// session's log says so in words, and the turn's end fails the session
// with "The API key was refused — set it in Settings".
func TestClaudeCodeKeyRefusedFailsSession(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, func(r *anthropictest.Request) anthropictest.Reply {
		return anthropictest.Reply{Error: &anthropictest.APIError{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}}
	})
	w.env = append(w.env, session.EnvAnthropicUpstream+"=http://"+net.JoinHostPort("127.0.0.1", api.Port))
	for _, s := range []struct{ name, value string }{
		{"ANTHROPIC_API_KEY", "sk-ant-test-wrong-0123456789"},
		{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
		{"CLAUDE_CODE_MAX_RETRIES", "1"},
	} {
		if _, errOut, code := w.run(s.value+"\n", "secrets", "set", s.name); code != 0 {
			t.Fatalf("secrets set %s: %s", s.name, errOut)
		}
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_RETRIES")

	started := time.Now()
	id := w.startID("--repo", w.repo, "--prompt", "Say hello.", "--cpus", "2", "--memory", "2048", "--disk", "2")
	var s lsEntry
	if !waitUntil(8*time.Minute, time.Second, func() bool {
		s = w.session(id)
		return s.State == "failed" || s.State == "stopped" || s.State == "interrupted"
	}) {
		t.Fatalf("session %s is still %s/%s (%s) after 8 minutes; the API saw:\n%s", id, s.State, s.Activity, s.Reason, api.Log())
	}
	t.Logf("start to failure: %.1f s; the API saw:\n%s", time.Since(started).Seconds(), api.Log())
	logs, sys, _ := w.run("", "logs", "--json", id)
	if readable, _, _ := w.run("", "logs", id); !strings.Contains(readable, "↻ The API key was refused — retry 1/") ||
		!strings.Contains(readable, "✗ Turn failed: The API key was refused — set it in Settings") {
		t.Errorf("`sandbar logs` does not say the retries and the failure in words:\n%s", readable)
	}
	if s.State != "failed" || s.Reason != "The API key was refused — set it in Settings" {
		t.Errorf("the session ended %s: %q; want failed: The API key was refused — set it in Settings\nlog:\n%s\n%s", s.State, s.Reason, logs, sys)
	}
	for _, want := range []string{`"subtype":"api_retry"`, `"error_status":401`, "the agent's turn failed: The API key was refused — set it in Settings"} {
		if !strings.Contains(logs+sys, want) {
			t.Errorf("the session's log has no %s:\n%s\n%s", want, logs, sys)
		}
	}
	n := 0
	for _, c := range api.Calls() {
		if c.Messages != nil && c.Status == 401 {
			n++
		}
	}
	if n < 2 {
		t.Errorf("the API refused %d Messages requests; want the first and its retry:\n%s", n, api.Log())
	}
}
