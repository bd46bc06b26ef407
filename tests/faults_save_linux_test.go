//go:build linux

package tests

import (
	"strings"
	"testing"
)

// TestStopSavesManyFilesAndNeverClaimsAFailedSave: two sessions at once.
// One has 10,000 uncommitted files (1 KB each): stop saves them all and
// exits 0, and merge brings them home. (The save once forked a stat per
// file and was cut off as silent after 90 s, while stop said "stopped
// by the user" and exited 0.) The other's agent breaks git in its clone:
// stop exits non-zero and says in one line that the work was not saved,
// why and what to do, and ls says the same.
func TestStopSavesManyFilesAndNeverClaimsAFailedSave(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	many := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "2", "--no-network")
	broken := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	w.waitState(many, "running")
	w.waitState(broken, "running")

	gen := `import os
for d in range(100):
    os.makedirs("gen/d%02d" % d, exist_ok=True)
    for i in range(100):
        with open("gen/d%02d/f%03d.txt" % (d, i), "w") as f:
            f.write(("file %d %d " % (d, i)).ljust(1023, "x") + "\n")
`
	if out, errOut, code := w.run("", "exec", many, "--", "python3", "-c", gen); code != 0 {
		t.Fatalf("make 10,000 files: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := w.guestSh(broken, "echo broken work > wip.txt && echo 'not a ref' > .git/HEAD"); code != 0 {
		t.Fatalf("break git: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code := w.run("", "stop", many)
	if code != 0 {
		t.Fatalf("stop of the session with 10,000 files exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", code, out, errOut, lastLines(w.ok("logs", many), 20))
	}
	if s := w.session(many); s.State != "stopped" || strings.HasPrefix(s.Reason, "work not saved") {
		t.Errorf("after stop: %s (%s)", s.State, s.Reason)
	}
	if out := w.ok("merge", many); !strings.Contains(out, "created at") {
		t.Errorf("merge says %q", out)
	}
	files := w.git("ls-tree", "-r", "--name-only", "sandbar/"+many, "gen")
	if n := strings.Count(files, "\n") + 1; n != 10000 {
		t.Errorf("the merged branch has %d files under gen/, want 10000", n)
	}

	out, errOut, code = w.run("", "stop", broken)
	if code == 0 {
		t.Fatalf("stop of a session whose save failed exited 0\nstdout: %s\nstderr: %s", out, errOut)
	}
	msg := strings.TrimSpace(errOut)
	if strings.Count(msg, "\n") > 0 || !strings.Contains(msg, "could not be saved") || !strings.Contains(msg, "git") || !strings.Contains(msg, "restart") {
		t.Errorf("stop's error should be one line saying the work was not saved, git's reason, and to restart; got:\n%s", errOut)
	}
	if strings.Contains(msg, "did the agent") {
		t.Errorf("stop's error guesses about the agent: %s", msg)
	}
	s := w.session(broken)
	if s.State != "stopped" || !strings.HasPrefix(s.Reason, "work not saved: ") {
		t.Errorf("ls says %s (%s), want stopped with \"work not saved: …\"", s.State, s.Reason)
	}
	if table := w.ok("ls"); !strings.Contains(table, "work not saved") {
		t.Errorf("ls does not say the work was not saved:\n%s", table)
	}
	if _, errOut, code := w.run("", "merge", broken); code == 0 || !strings.Contains(errOut, "could not be saved") {
		t.Errorf("merge of unsaved work: exit %d: %s", code, errOut)
	}
}
