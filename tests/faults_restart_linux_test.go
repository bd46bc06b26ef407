//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestartWithoutDiskContinuesFromSavedWork: a real VM's session
// commits work and leaves some uncommitted, and stops (saved). Its
// scratch.img is deleted. `sandbar restart` refuses, offering the choice;
// `sandbar restart --from-saved` boots a new clone holding the earlier
// commit and the work that was uncommitted (which the stop auto-committed),
// not the commit it started at, and says which; later work merges home
// beside it.
func TestRestartWithoutDiskContinuesFromSavedWork(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	if out, errOut, code := w.guestSh(id, "echo early > early.txt && git add early.txt && git commit -qm early && echo wip > wip.txt"); code != 0 {
		t.Fatalf("work: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("stop", id)
	if err := os.Remove(filepath.Join(w.home, "sessions", id, "scratch.img")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := w.run("", "restart", id)
	if code == 0 || !strings.Contains(errOut, "is gone") || !strings.Contains(errOut, "restart --from-saved") || !strings.Contains(errOut, "sandbar rm") {
		t.Fatalf("restart without its disk: exit %d: %s", code, errOut)
	}
	if out := w.ok("restart", "--from-saved", id); !strings.Contains(out, "from its last saved work") {
		t.Errorf("restart --from-saved says %q", out)
	}
	w.waitState(id, "running")
	out, errOut, code := w.guestSh(id, "cat early.txt wip.txt && git log --format=%s")
	if code != 0 || !strings.HasPrefix(out, "early\nwip\n") || !strings.Contains(out, "\nearly\n") {
		t.Fatalf("the new clone: exit %d\n%s%s", code, out, errOut)
	}
	logOut, logErr, _ := w.run("", "logs", id)
	if !strings.Contains(logOut+logErr, "continuing from its last saved work") {
		t.Errorf("the log does not say where the session continues from:\n%s", lastLines(logOut+logErr, 15))
	}
	if out, errOut, code := w.guestSh(id, "echo after > after.txt && git add after.txt && git commit -qm after"); code != 0 {
		t.Fatalf("work after the restart: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("stop", id)
	w.ok("merge", id)
	for _, f := range []string{"early.txt", "wip.txt", "after.txt"} {
		w.git("cat-file", "-e", "sandbar/"+id+":"+f)
	}
}

// TestRestartTakesTheAutoCommit: the commit Sandbar makes on the host of
// what a stopped session left uncommitted becomes the clone's history
// when it restarts: the VM's branch is that commit with nothing left
// uncommitted, and work after it merges home on top of it, one line of
// history (before, the clone went on from its older commit and the
// auto-commit fell off the branch).
func TestRestartTakesTheAutoCommit(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	if out, errOut, code := w.guestSh(id, "echo early > early.txt && git add early.txt && git commit -qm early && echo wip > wip.txt"); code != 0 {
		t.Fatalf("work: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("stop", id)
	w.ok("restart", id)
	w.waitLog(id, "agent started", 2)
	out, errOut, code := w.guestSh(id, "git status --porcelain; git log --format=%s")
	if code != 0 || !strings.HasPrefix(out, "Work left uncommitted by Sandbar session") || !strings.Contains(out, "\nearly\n") {
		_, log, _ := w.run("", "logs", id)
		t.Fatalf("the clone after the restart: exit %d\n%s%s\nlog:\n%s", code, out, errOut, lastLines(log, 15))
	}
	if _, log, _ := w.run("", "logs", id); !strings.Contains(log, "the clone in the VM goes on from") {
		t.Errorf("the log does not say the clone took the commit:\n%s", lastLines(log, 15))
	}
	if out, errOut, code := w.guestSh(id, "echo after > after.txt && git add after.txt && git commit -qm after"); code != 0 {
		t.Fatalf("work after the restart: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("stop", id)
	w.ok("merge", id)
	log := w.git("log", "--format=%s", "sandbar/"+id)
	if lines := strings.Split(log, "\n"); len(lines) < 3 || lines[0] != "after" || !strings.HasPrefix(lines[1], "Work left uncommitted by Sandbar session") || lines[2] != "early" {
		t.Errorf("the merged branch's history:\n%s", log)
	}
	w.git("cat-file", "-e", "sandbar/"+id+":wip.txt")
}
