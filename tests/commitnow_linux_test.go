//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitNowThenMerge: a real VM's session has work it has not
// committed; `sandbar commit` commits it on the session's branch while
// the session runs, the VM's clone takes that commit as its tip, and
// `sandbar merge --into` brings it into the person's branch, first
// refused for an unrelated uncommitted file there (offering --stash),
// then with --stash, the person's file as it was. Work after it, left
// uncommitted, is committed on top by the stop, one line of history.
func TestCommitNowThenMerge(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	if _, errOut, code := w.run("", "commit", id); code == 0 || !strings.Contains(errOut, "nothing to commit: the work is already saved at ") {
		t.Errorf("commit with nothing to commit: exit %d: %s", code, errOut)
	}
	if out, errOut, code := w.guestSh(id, "echo early > early.txt && git add early.txt && git commit -qm early && echo wip > wip.txt"); code != 0 {
		t.Fatalf("work: exit %d\n%s%s", code, out, errOut)
	}
	out := w.ok("commit", "-m", "WIP from the test", id)
	if !strings.Contains(out, "committed the session's work on sandbar/"+id) || !strings.Contains(out, `"WIP from the test": 1 file (wip.txt)`) || strings.Contains(out, "did not take") {
		t.Errorf("sandbar commit says:\n%s", out)
	}
	if out, errOut, code := w.guestSh(id, "git status --porcelain; git log --format=%s"); code != 0 || !strings.HasPrefix(out, "WIP from the test\nearly\n") {
		t.Fatalf("the clone in the VM after the commit: exit %d\n%s%s", code, out, errOut)
	}

	// The person's own uncommitted change, in a file the work leaves alone.
	readme := filepath.Join(w.repo, "README.md")
	os.WriteFile(readme, []byte("# mine, not committed\n"), 0o644)
	if _, errOut, code := w.run("", "merge", "--into", id); code == 0 || !strings.Contains(errOut, "README.md") || !strings.Contains(errOut, "sandbar merge --into --stash") {
		t.Fatalf("merge --into a dirty tree: exit %d: %s", code, errOut)
	}
	if out := w.ok("merge", "--into", "--stash", id); !strings.Contains(out, "were stashed for the merge and put back") {
		t.Errorf("merge --into --stash says:\n%s", out)
	}
	if b, _ := os.ReadFile(readme); string(b) != "# mine, not committed\n" {
		t.Errorf("README.md = %q after the merge, want the person's change", b)
	}
	if log := w.git("log", "--format=%s", "main"); !strings.HasPrefix(log, "WIP from the test\nearly\n") {
		t.Errorf("main after the merge:\n%s", log)
	}
	w.git("cat-file", "-e", "main:wip.txt")
	if st := w.git("stash", "list"); st != "" {
		t.Errorf("stash list = %q", st)
	}

	// Later work, left uncommitted, is committed by the stop on top.
	if out, errOut, code := w.guestSh(id, "echo after > after.txt"); code != 0 {
		t.Fatalf("work after: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("stop", id)
	w.ok("merge", id)
	log := w.git("log", "--format=%s", "sandbar/"+id)
	if lines := strings.Split(log, "\n"); len(lines) < 3 || !strings.HasPrefix(lines[0], "Work left uncommitted by Sandbar session") || lines[1] != "WIP from the test" || lines[2] != "early" {
		t.Errorf("the session's branch after the stop:\n%s", log)
	}
	w.git("cat-file", "-e", "sandbar/"+id+":after.txt")
	if _, errOut, code := w.run("", "commit", id); code == 0 || !strings.Contains(errOut, "not running") || !strings.Contains(errOut, "sandbar merge") {
		t.Errorf("commit of a stopped session: exit %d: %s", code, errOut)
	}
}
