package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/workspace"
)

func TestMergeMessage(t *testing.T) {
	for _, c := range []struct {
		name string
		res  workspace.MergeResult
		want []string
		imp  widget.Importance
	}{
		{"created", workspace.MergeResult{Created: true, Commit: "0123456789abcdef"},
			[]string{"Branch sandbar/x created in /r at 0123456.", "working tree is untouched"}, widget.SuccessImportance},
		{"moved", workspace.MergeResult{Updated: true, Previous: "aaaaaaaaaaaa", Commit: "bbbbbbbbbbbb"},
			[]string{"moved from aaaaaaa to bbbbbbb."}, widget.SuccessImportance},
		{"fast-forward into main", workspace.MergeResult{Into: "main", FastForward: true, Updated: true, Previous: "aaaaaaaaaaaa", Commit: "bbbbbbbbbbbb"},
			[]string{"Merged into main in /r: it moved from aaaaaaa to the session's bbbbbbb, and the working tree is updated."}, widget.SuccessImportance},
		{"merge commit into main", workspace.MergeResult{Into: "main", Updated: true, Previous: "aaaaaaaaaaaa", Commit: "cccccccccccc"},
			[]string{"Merged into main in /r with merge commit ccccccc, and the working tree is updated."}, widget.SuccessImportance},
		{"submodules", workspace.MergeResult{Created: true, Commit: "0123456789abcdef", Submodules: []string{"libs/core", "libs/core/deep"}},
			[]string{"commits in submodules libs/core, libs/core/deep are in the repository's copies too, as branch sandbar/x"}, widget.SuccessImportance},
		{"skipped submodule", workspace.MergeResult{Created: true, Commit: "0123456789abcdef", SkippedSubmodules: []string{"out/vendor: not a submodule of /r"}},
			[]string{"Not brought into the repository's copies", "out/vendor: not a submodule of /r"}, widget.SuccessImportance},
		{"uncommitted", workspace.MergeResult{Commit: "0123456789abcdef", Uncommitted: []string{"a.go"}},
			[]string{"already at 0123456", "1 file was not committed in the session, so not merged: a.go. Press Commit now (or ask the agent to commit)"}, widget.WarningImportance},
	} {
		got := mergeMessage("sandbar/x", "/r", c.res, true)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: message %q lacks %q", c.name, got, w)
			}
		}
		if imp := mergeImportance(c.res); imp != c.imp {
			t.Errorf("%s: importance %v, want %v", c.name, imp, c.imp)
		}
	}
}

// TestSessionWindowMergeActions: the actions say what they do, "Merge
// into <branch>" merges into the checked-out branch and its working
// tree, and afterwards the window says where the work went and turns
// that action off.
func TestSessionWindowMergeActions(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, commitAgent)
	w := h.open(t, s.ID)
	// The repository's folder is said under ~.
	h.u.Home = filepath.Dir(w.project.Path)
	shown := "~/" + filepath.Base(w.project.Path)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	cur := sessiontest.Git(t, repo, "symbolic-ref", "--short", "HEAD")
	h.q.WaitFor(t, 30*time.Second, "the merge actions named for "+cur+", and the commit Sandbar made", func() bool {
		return w.merge.Text == "Merge into "+cur && !w.merge.Disabled() && w.target.AutoCommit != ""
	})
	if want := "Create branch " + s.Branch; w.branch.Text != want || w.branch.Disabled() {
		t.Errorf("branch action %q (disabled %v), want %q, on", w.branch.Text, w.branch.Disabled(), want)
	}
	if note := w.mergeNote.Text; !w.mergeNote.Visible() || !strings.Contains(note, "Sandbar committed the work the session left uncommitted") {
		t.Errorf("note beneath the actions = %q, want the auto-commit", note)
	}

	// The person's uncommitted change stops it, untouched.
	readme := filepath.Join(repo, "README.md")
	os.WriteFile(readme, []byte("mine\n"), 0o644)
	head := sessiontest.Git(t, repo, "rev-parse", "HEAD")
	test.Tap(w.merge)
	h.q.WaitFor(t, 30*time.Second, "the refusal", func() bool { return strings.HasPrefix(w.notice.text(), "Not merged") })
	if msg := w.notice.text(); !strings.Contains(msg, "your working tree has uncommitted changes in 1 file (README.md): commit or stash them first") {
		t.Errorf("refusal = %q", msg)
	}
	if b, _ := os.ReadFile(readme); string(b) != "mine\n" || sessiontest.Git(t, repo, "rev-parse", "HEAD") != head {
		t.Errorf("a refused merge touched the repository (README.md %q)", b)
	}
	sessiontest.Git(t, repo, "checkout", "--", "README.md")

	h.q.WaitFor(t, 30*time.Second, "Merge into to be on again", func() bool { return !w.merge.Disabled() })
	test.Tap(w.merge)
	h.q.WaitFor(t, 30*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Merged into "+cur) })
	if msg := w.notice.text(); !strings.HasPrefix(msg, "Merged into "+cur+" in "+shown+":") || strings.Contains(msg, w.project.Path) {
		t.Errorf("result = %q, want the repository said as %s", msg, shown)
	}
	for _, f := range []string{"work.txt", "draft.txt"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Errorf("%s is not in the repository's working tree: %v", f, err)
		}
	}
	if st := sessiontest.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the repository is not clean after the merge: %q", st)
	}
	h.q.WaitFor(t, 30*time.Second, "the merged state beneath the actions", func() bool {
		return strings.Contains(w.mergeNote.Text, "Merged into "+cur+" at ") && strings.Contains(w.mergeNote.Text, "The session's work is already in "+cur+".") &&
			w.merge.Disabled()
	})
	if w.branch.Disabled() {
		t.Error("Create branch is off after a merge into " + cur + ": the branch was never created")
	}
}

// TestSessionWindowNothingToMerge: a session that changed nothing has
// both actions off, and says why.
func TestSessionWindowNothingToMerge(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "true")
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	h.q.WaitFor(t, 30*time.Second, "the reason there is nothing to merge", func() bool {
		return w.mergeNote.Text == "Nothing to merge: the session made no changes."
	})
	if !w.branch.Disabled() || !w.merge.Disabled() {
		t.Errorf("with nothing to merge, Create branch is disabled %v and Merge into %v; want both off", w.branch.Disabled(), w.merge.Disabled())
	}
}
