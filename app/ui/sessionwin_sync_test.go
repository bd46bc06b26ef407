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
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// syncAgent changes README.md in a commit of its own, then echoes each
// message it is sent.
const syncAgent = `echo "# agent" > README.md && git -c user.name=A -c user.email=a@example.com commit -qam "agent's readme"
echo ready
trap 'exit 143' TERM
while read -r line; do echo "heard: $line"; done`

// cloneGit runs git in the session's clone (in its "VM").
func cloneGit(t *testing.T, h *swHarness, id string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := h.env.Manager.Exec(context.Background(), id, session.ExecRequest{Argv: append([]string{"git"}, args...)}, &out, &errb)
	if err != nil || res.Code != 0 {
		t.Fatalf("git %v in the clone: %v, exit %d: %s", args, err, res.Code, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// TestSessionWindowSync: Sync brings the person's newer main into the
// running session's clone and offers to merge it; Merge it makes the
// merge commit there; a conflicting change stops the next merge, the
// notice names the file and offers "Ask the agent to resolve", which
// sends the agent a message naming it.
func TestSessionWindowSync(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, syncAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the agent to commit", func() bool { return logHas(w.logs, "ready") })
	cur := sessiontest.Git(t, repo, "symbolic-ref", "--short", "HEAD")
	h.q.WaitFor(t, 30*time.Second, "Sync to be on", func() bool { return !w.sync.btn.Disabled() })

	os.WriteFile(filepath.Join(repo, "person.txt"), []byte("person\n"), 0o644)
	sessiontest.Git(t, repo, "add", "person.txt")
	sessiontest.Git(t, repo, "commit", "-qm", "person's file")
	mine := sessiontest.Git(t, repo, "rev-parse", "HEAD")
	test.Tap(w.sync.btn)
	if msg := w.notice.text(); w.target.Into == cur && msg != "Bringing your "+cur+" into the session's clone…" {
		t.Errorf("while syncing the notice says %q", msg)
	}
	h.q.WaitFor(t, 60*time.Second, "the offer to merge", func() bool { return w.notice.button(syncMergeLabel) != nil })
	if msg := w.notice.text(); !strings.Contains(msg, "origin/"+cur+" is your "+cur+" at "+mine[:7]) || !strings.Contains(msg, "1 commit the session's branch lacks") {
		t.Errorf("sync notice = %q", msg)
	}
	if got := cloneGit(t, h, s.ID, "rev-parse", "origin/"+cur); got != mine {
		t.Errorf("origin/%s in the clone = %s, want %s", cur, got, mine)
	}
	for _, l := range []string{syncRebaseLabel, syncAskLabel} {
		if w.notice.button(l) == nil {
			t.Errorf("the notice does not offer %q", l)
		}
	}
	test.Tap(w.notice.button(syncMergeLabel))
	h.q.WaitFor(t, 60*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Merged origin/"+cur) })
	if parents := strings.Fields(cloneGit(t, h, s.ID, "log", "-1", "--format=%P")); len(parents) != 2 || parents[1] != mine {
		t.Errorf("the clone's HEAD has parents %v, want the agent's commit and %s", parents, mine)
	}

	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# person\n"), 0o644)
	sessiontest.Git(t, repo, "commit", "-qam", "person's readme")
	test.Tap(w.sync.btn)
	h.q.WaitFor(t, 60*time.Second, "the offer to merge again", func() bool { return w.notice.button(syncMergeLabel) != nil })
	test.Tap(w.notice.button(syncMergeLabel))
	h.q.WaitFor(t, 60*time.Second, "the conflict", func() bool { return w.notice.button(syncResolveLabel) != nil })
	if msg := w.notice.text(); !strings.Contains(msg, "stopped on conflicts in 1 file: README.md") || w.notice.msg.Importance != widget.WarningImportance {
		t.Errorf("conflict notice = %q (%v)", msg, w.notice.msg.Importance)
	}
	test.Tap(w.notice.button(syncResolveLabel))
	h.q.WaitFor(t, 30*time.Second, "the agent to hear the prepared message", func() bool {
		for _, l := range w.logs.Lines() {
			if strings.Contains(l, "heard: ") && strings.Contains(l, "stopped on conflicts in 1 file: `README.md`") {
				return true
			}
		}
		return false
	})
	if msg := w.notice.text(); !strings.HasPrefix(msg, "Asked the agent to resolve the conflicts in 1 file: README.md") {
		t.Errorf("after asking: %q", msg)
	}
	if _, err := h.env.Manager.Stop(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 30*time.Second, "Sync to be off once the session stopped", func() bool { return w.sync.btn.Disabled() })
}

func TestSyncNoticeHostileNames(t *testing.T) {
	res := session.SyncResult{Branch: "main", Ref: "origin/main", Commit: strings.Repeat("a", 40), Mode: session.SyncMerge,
		Op: "merge", Conflicts: []string{`"\x1b[2J"`, "b.go"}, More: 3}
	imp, text, answers := syncNotice(res)
	if imp != widget.WarningImportance || !strings.Contains(text, `conflicts in 5 files: "\x1b[2J", b.go and 3 more`) || strings.Contains(text, "\x1b") {
		t.Errorf("notice %v %q", imp, text)
	}
	if len(answers) != 1 || answers[0].label != syncResolveLabel || answers[0].mode != session.SyncAsk {
		t.Errorf("answers %+v", answers)
	}
}
