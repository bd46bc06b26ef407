package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/store"
)

// TestSessionWindowNetworkListsFailed: connections the rules allowed but
// that failed are listed in the Network tab, each with why (the tab said
// "8 of them failed (see sandbar net …)" instead).
func TestSessionWindowNetworkListsFailed(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	earlier := time.Now().Add(-time.Minute)
	if _, err := h.env.Store.RecordNetAttempts(ctx, s.ID, []store.NetAttempt{
		{Proto: "tcp", Host: "api.anthropic.com", Port: 443, Allowed: true, Rule: "allow api.anthropic.com", First: earlier, Last: earlier, Count: 3},
		{Proto: "tcp", Host: "registry.npmjs.org", Port: 443, Allowed: true, Rule: "allow registry.npmjs.org read", Error: "connection refused", First: earlier, Last: earlier, Count: 5},
		{Proto: "tcp", Host: "proxy.golang.org", Port: 443, Allowed: true, Rule: "allow proxy.golang.org read", Error: "no answer within 10s", First: earlier, Last: earlier.Add(time.Second), Count: 3},
	}); err != nil {
		t.Fatal(err)
	}
	w := h.openNetwork(t, s.ID)
	h.q.WaitFor(t, 5*time.Second, "the counts read", func() bool { return strings.Contains(w.net.counts.Text, "8 of them failed") })
	if strings.Contains(w.net.counts.Text, "sandbar net") {
		t.Errorf("the counts %q send the person to the command line", w.net.counts.Text)
	}
	if !w.net.showFailed.Visible() {
		t.Fatal("no Show failed with failed connections")
	}
	test.Tap(w.net.showFailed)
	lines := strings.Split(w.net.detail.Text, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "proxy.golang.org:443 (tcp), 3 times") || !strings.HasSuffix(lines[1], ": no answer within 10s") ||
		!strings.HasPrefix(lines[2], "registry.npmjs.org:443 (tcp), 5 times") || !strings.HasSuffix(lines[2], ": connection refused") {
		t.Errorf("Show failed lists:\n%s\nwant proxy.golang.org then registry.npmjs.org, with why", w.net.detail.Text)
	}
	if strings.Contains(w.net.detail.Text, "api.anthropic.com") {
		t.Errorf("a connection that did not fail is listed as failed:\n%s", w.net.detail.Text)
	}
}
