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

// TestSessionWindowNetworkRefusedWrite: a write refused on a read-only
// connection (a push to a default code host) is listed with its method
// and path, and its button is Allow writes for this session, which adds
// "allow HOST write" to the session's rules.
func TestSessionWindowNetworkRefusedWrite(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.openNetwork(t, s.ID)
	at := time.Now()
	a := store.NetAttempt{Proto: session.ProtoWrite, Host: "github.com", Port: 443, Count: 1, First: at, Last: at, Rule: "allow github.com read",
		Reason: "POST /o/r.git/git-receive-pack (git push): writes are not allowed to this host: allow writes for this session"}
	w.net.event(session.Event{Kind: session.EventNet, Time: at, Net: &a})
	h.q.WaitFor(t, 5*time.Second, "the refused write listed", func() bool { return deniedItemFor(w, "github.com") != nil })
	it := deniedItemFor(w, "github.com")
	if it.dest.Text != "github.com:443 (write)" || !strings.Contains(it.reason.Text, "POST /o/r.git/git-receive-pack") ||
		!strings.Contains(it.reason.Text, "writes are not allowed to this host: allow writes for this session") {
		t.Errorf("row shows %q %q", it.dest.Text, it.reason.Text)
	}
	if it.forSession.Text != "Allow writes for this session" || it.forSession.Disabled() {
		t.Errorf("the row's button is %q (disabled %v), want Allow writes for this session", it.forSession.Text, it.forSession.Disabled())
	}
	test.Tap(it.forSession)
	h.q.WaitFor(t, 5*time.Second, "the row saying writes are allowed", func() bool {
		it := deniedItemFor(w, "github.com")
		return it != nil && strings.HasPrefix(it.reason.Text, "Allowed for this session — try again")
	})
	if rules, err := h.env.Store.SessionNetRules(ctx, s.ID); err != nil || rules != "allow github.com write\n" {
		t.Errorf("the session's rules are %q, %v; want allow github.com write", rules, err)
	}
}
