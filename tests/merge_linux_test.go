//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeIntoAfterAutoCommit: a session stopped with uncommitted edits
// has them committed on its branch, with its prompt as the message, and
// `sandbar merge --into` brings them into the person's checked-out
// branch and working tree; ls shows where they went, and a second merge
// has nothing to do.
func TestMergeIntoAfterAutoCommit(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	agent := `echo "draft from the agent" > draft.txt; echo "more" >> README.md; echo edited; while read -r l; do :; done`
	id := w.startID("--repo", w.repo, "--agent", agent, "--cpus", "1", "--memory", "768", "--disk", "1",
		"--prompt", "Draft the notes\n\nKeep them short.")
	waitLog(t, w, id, "edited")
	w.ok("stop", id)
	s := w.waitState(id, "stopped")
	// Sandbar's own lines go to stderr.
	if _, sys, _ := w.run("", "logs", id); !strings.Contains(sys, "committed the uncommitted work (2 files) on "+s.Branch+" as ") {
		t.Errorf("the log does not say the work was committed:\n%s", sys)
	}

	out := w.ok("merge", "--into", id)
	if !strings.Contains(out, "merged the session's work into main in "+w.repo+": a fast-forward") {
		t.Errorf("merge --into says %q", out)
	}
	if got := w.git("log", "-1", "--format=%an|%s", "main"); got != "Sandbar|Draft the notes" {
		t.Errorf("main's last commit = %q, want Sandbar's with the prompt's first line", got)
	}
	if b, _ := os.ReadFile(filepath.Join(w.repo, "draft.txt")); string(b) != "draft from the agent\n" {
		t.Errorf("draft.txt in the working tree = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.repo, "README.md")); string(b) != "# test\nmore\n" {
		t.Errorf("README.md in the working tree = %q", b)
	}
	if st := w.git("status", "--porcelain"); st != "" {
		t.Errorf("the repository is not clean after the merge: %q", st)
	}
	if b := w.git("branch", "--list", s.Branch); b != "" {
		t.Errorf("merge --into created %q", b)
	}
	head := w.git("rev-parse", "--short=7", "HEAD")
	if ls := w.ok("ls"); !strings.Contains(ls, "MERGED") || !strings.Contains(ls, "main@"+head) {
		t.Errorf("ls does not show the merge into main@%s:\n%s", head, ls)
	}

	_, errOut, code := w.run("", "merge", "--into", id)
	if code == 0 || !strings.Contains(errOut, "nothing to merge") {
		t.Errorf("a second merge --into: exit %d, %q; want nothing to merge", code, errOut)
	}
}
