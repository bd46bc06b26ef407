package ui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// busyAgent writes a file it does not commit and keeps working.
const busyAgent = `echo draft > draft.txt && echo drafted && exec sleep 600`

// TestSessionWindowCommitNow: Commit now is on while the session runs;
// it commits the work on disk on the session's branch (saying the agent
// was mid-turn), the clone in the VM takes the commit, Merge into then
// brings it home while the session runs, and a second press says there
// is nothing to commit.
func TestSessionWindowCommitNow(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, busyAgent)
	w := h.open(t, s.ID)
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 30*time.Second)
	h.q.WaitFor(t, 30*time.Second, "the agent to write its draft", func() bool { return hasLine(w.logs, "drafted") })
	h.q.WaitFor(t, 10*time.Second, "Commit now to be on", func() bool { return !w.commitNow.Disabled() })
	if w.commitNow.Text != "Commit now" {
		t.Errorf("the button says %q", w.commitNow.Text)
	}

	// Merge into, with nothing committed yet, offers Commit now.
	test.Tap(w.merge)
	h.q.WaitFor(t, 60*time.Second, "the refusal offering Commit now", func() bool { return w.notice.button("Commit now") != nil })
	if msg := w.notice.text(); !strings.Contains(msg, "the session has committed nothing yet (1 file changed but not committed): commit them with `sandbar commit ") {
		t.Errorf("refusal = %q", msg)
	}
	test.Tap(w.notice.button("Commit now"))
	h.q.WaitFor(t, 60*time.Second, "the commit's result", func() bool { return strings.HasPrefix(w.notice.text(), "Committed the session's work") })
	msg := w.notice.text()
	if !strings.Contains(msg, "(1 file) on "+s.Branch+" as ") || !strings.Contains(msg, "The agent was in the middle of a turn") || strings.Contains(msg, "did not take") {
		t.Errorf("result = %q", msg)
	}
	// The clone in the VM is at the commit, with nothing left uncommitted.
	var out bytes.Buffer
	res, err := h.env.Manager.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"sh", "-c", "git log -1 --format=%an:%s && git status --porcelain"}}, &out, &out)
	if err != nil || res.Code != 0 {
		t.Fatalf("git in the VM: %v %+v %s", err, res, out.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, "Sandbar:") || strings.Contains(got, "draft.txt") {
		t.Errorf("the clone in the VM: %q, want Sandbar's commit at its tip and nothing uncommitted", got)
	}

	// Merge into the running session's work brings the commit home.
	cur := sessiontest.Git(t, repo, "symbolic-ref", "--short", "HEAD")
	h.q.WaitFor(t, 30*time.Second, "Merge into to be on", func() bool { return !w.merge.Disabled() })
	test.Tap(w.merge)
	h.q.WaitFor(t, 60*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Merged into "+cur) })
	if b, err := os.ReadFile(filepath.Join(repo, "draft.txt")); err != nil || string(b) != "draft\n" {
		t.Errorf("draft.txt in the repository = %q, %v", b, err)
	}

	// Nothing left to commit.
	h.q.WaitFor(t, 30*time.Second, "Commit now to be on again", func() bool { return !w.commitNow.Disabled() })
	test.Tap(w.commitNow)
	h.q.WaitFor(t, 60*time.Second, "the answer", func() bool { return strings.HasPrefix(w.notice.text(), "Nothing to commit") })
	if msg := w.notice.text(); !strings.Contains(msg, "Nothing to commit: the work is already saved at ") {
		t.Errorf("second press = %q", msg)
	}

	// Stopped, there is nothing to commit in it: the button is off.
	if _, err := h.env.Manager.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 30*time.Second, "Commit now to be off once stopped", func() bool { return w.commitNow.Disabled() })
}

// TestSessionWindowStashMerge: Merge into a working tree with a change
// the session's work does not touch offers Stash, merge, unstash; it
// merges and the person's change is there afterwards, as it was.
func TestSessionWindowStashMerge(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, commitAgent)
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	cur := sessiontest.Git(t, repo, "symbolic-ref", "--short", "HEAD")
	h.q.WaitFor(t, 30*time.Second, "Merge into to be on", func() bool { return w.merge.Text == "Merge into "+cur && !w.merge.Disabled() })
	readme := filepath.Join(repo, "README.md")
	os.WriteFile(readme, []byte("mine, not committed\n"), 0o644)

	test.Tap(w.merge)
	h.q.WaitFor(t, 30*time.Second, "the refusal offering the stash", func() bool { return w.notice.button("Stash, merge, unstash") != nil })
	if msg := w.notice.text(); !strings.Contains(msg, "uncommitted changes in 1 file (README.md)") {
		t.Errorf("refusal = %q", msg)
	}
	test.Tap(w.notice.button("Stash, merge, unstash"))
	h.q.WaitFor(t, 60*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Merged into "+cur) })
	if msg := w.notice.text(); !strings.Contains(msg, "Your uncommitted changes in 1 file (README.md) were stashed for the merge and put back.") {
		t.Errorf("result = %q", msg)
	}
	if b, _ := os.ReadFile(readme); string(b) != "mine, not committed\n" {
		t.Errorf("README.md = %q, want the person's change back", b)
	}
	if _, err := os.Stat(filepath.Join(repo, "work.txt")); err != nil {
		t.Errorf("the session's work is not in the repository: %v", err)
	}
	if st := sessiontest.Git(t, repo, "stash", "list"); st != "" {
		t.Errorf("stash list = %q, want empty", st)
	}
	if got, _ := h.env.Manager.Get(context.Background(), s.ID); got.Merged == (store.Merge{}) {
		t.Error("the merge was not recorded")
	}
}

func TestCommitMessageText(t *testing.T) {
	r := session.CommitResult{Commit: "0123456789ab", Branch: "sandbar/x", Subject: "Fix it", Files: []string{"a.go", "b.go"}}
	if got := commitMessageText(r); got != `Committed the session's work (2 files) on sandbar/x as 0123456 "Fix it". Merge brings it home.` {
		t.Errorf("message = %q", got)
	}
	r.NotInClone = "the branch has moved since the work was saved"
	if got := commitMessageText(r); !strings.Contains(got, "The clone in the VM did not take the commit (the branch has moved since the work was saved)") || commitImportance(r) == commitImportance(session.CommitResult{}) {
		t.Errorf("message = %q", got)
	}
}
