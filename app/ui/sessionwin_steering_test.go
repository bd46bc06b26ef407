package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// steeringAgent commits files that steer the person's tools.
const steeringAgent = `printf '*.bin filter=lfs\n' > .gitattributes && printf '[lfs]\n\turl = http://127.0.0.1:9/x\n' > .lfsconfig && mkdir -p .sandbar && echo 'allow example.com:443' > .sandbar/network && echo work > work.txt && git add -A && git commit -qm "agent work" && echo committed`

// TestSessionWindowSteering: Merge into a session that changed steering
// files asks first, in a dialog that names them (and which needs trust
// again) with a Diff button that shows each in the Changes tab; Cancel
// leaves the repository as it was, Merge anyway merges.
func TestSessionWindowSteering(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, steeringAgent)
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	h.q.WaitFor(t, 30*time.Second, "the changes listed and Merge into on", func() bool {
		return len(w.changes.files) >= 4 && !w.merge.Disabled() && w.target.Branch != ""
	})
	head := sessiontest.Git(t, repo, "rev-parse", "HEAD")

	test.Tap(w.merge)
	h.q.WaitFor(t, 30*time.Second, "the steering dialog", func() bool { return w.win.Canvas().Overlays().Top() != nil })
	top := w.win.Canvas().Overlays().Top()
	for _, want := range []string{".gitattributes", ".lfsconfig", ".sandbar/network", "This changes .sandbar/network, which will need your trust again before Sandbar uses it."} {
		found := false
		for _, x := range texts(top) {
			found = found || strings.Contains(x, want)
		}
		if !found {
			t.Errorf("the dialog does not show %q: %q", want, texts(top))
		}
	}
	if sessiontest.Git(t, repo, "rev-parse", "HEAD") != head {
		t.Fatal("the merge moved the branch before the person said yes")
	}
	if _, err := os.Stat(filepath.Join(repo, ".lfsconfig")); err == nil {
		t.Fatal(".lfsconfig reached the working tree before the person said yes")
	}

	// One click: the first file's diff, in the Changes tab.
	test.Tap(overlayButton(t, w.win, "Diff"))
	h.q.WaitFor(t, 30*time.Second, "the diff of .gitattributes in the Changes tab", func() bool {
		return w.tabs.Selected().Text == tabChanges && strings.Contains(w.changes.diffText(), "filter=lfs")
	})

	test.Tap(overlayButton(t, w.win, "Cancel"))
	h.q.WaitFor(t, 30*time.Second, "the dialog gone", func() bool { return w.win.Canvas().Overlays().Top() == nil })
	if sessiontest.Git(t, repo, "rev-parse", "HEAD") != head {
		t.Error("Cancel merged")
	}

	h.q.WaitFor(t, 30*time.Second, "Merge into to be on again", func() bool { return !w.merge.Disabled() })
	test.Tap(w.merge)
	h.q.WaitFor(t, 30*time.Second, "the steering dialog again", func() bool { return w.win.Canvas().Overlays().Top() != nil })
	test.Tap(overlayButton(t, w.win, "Merge anyway"))
	h.q.WaitFor(t, 30*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Merged into ") })
	if msg := w.notice.text(); !strings.Contains(msg, "It changes 3 files that steer tools on your machine") || !strings.Contains(msg, ".sandbar/network (will need your trust again") {
		t.Errorf("result = %q, want the steering files named", msg)
	}
	if _, err := os.Stat(filepath.Join(repo, ".lfsconfig")); err != nil {
		t.Errorf(".lfsconfig is not in the working tree after Merge anyway: %v", err)
	}
}
