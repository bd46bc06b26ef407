package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// TestRemoveProjectWithSessions: Remove on a project that has sessions
// offers to move them to the trash (it failed with command-line
// instructions), and then to remove the project; the banner does not
// keep a refusal once the sessions are gone.
func TestRemoveProjectWithSessions(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "busy")
	ctx := context.Background()
	var ids []string
	for range 2 {
		s, err := h.env.Manager.Start(ctx, session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("true")})
		if err != nil {
			t.Fatal(err)
		}
		h.env.WaitState(t, s.ID, session.StateStopped, 20*time.Second)
		ids = append(ids, s.ID)
	}
	mw := h.mainWindow(t)
	h.q.WaitFor(t, 5*time.Second, "the project's two sessions counted", func() bool { return mw.counts[p.ID] == 2 })

	mw.confirmRemoveProject(p.ID)
	top := mw.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("Remove showed no dialog")
	}
	if shown := strings.Join(texts(top), " "); !strings.Contains(shown, "busy still has 2 sessions") || !strings.Contains(shown, "move them to the trash") {
		t.Errorf("the dialog says %q", shown)
	}
	test.Tap(overlayButton(t, mw.win, "Move to Trash"))
	h.q.WaitFor(t, 20*time.Second, "the sessions in the trash, and the banner offering to remove the project", func() bool {
		return mw.banner.action.Visible() && mw.banner.action.Text == "Remove busy"
	})
	if !strings.HasPrefix(mw.banner.text.Text, "Moved 2 sessions of busy to the trash.") {
		t.Errorf("banner %q", mw.banner.text.Text)
	}
	tr, err := h.env.Manager.Trash(ctx)
	if err != nil || len(tr) != 2 {
		t.Fatalf("the trash holds %d sessions (%v), want the 2 of busy", len(tr), err)
	}

	test.Tap(mw.banner.action)
	h.q.WaitFor(t, 10*time.Second, "the project removed, and the banner saying so", func() bool {
		return len(mw.projects) == 0 && mw.banner.text.Text == "Removed busy from Sandbar."
	})
	if ps, _ := h.env.Manager.Projects(ctx); len(ps) != 0 {
		t.Errorf("projects after the removal: %+v", ps)
	}
}
