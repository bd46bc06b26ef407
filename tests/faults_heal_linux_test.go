//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/store"
)

// TestDatabaseHealsFromDisk: one world, two faults made for real.
//
// A WAL truncated after `kill -9` of the engine: a real VM's session
// commits work, leaves some uncommitted, is renamed and stopped (saved),
// all of it only in the WAL; the engine is killed and the WAL cut to
// nothing, so the database has lost the session. The next `sandbar ls`
// (which starts an engine, which heals) lists it again, recovered, with
// its title and project, and says once "recovered 1 session the database
// had lost"; `sandbar merge` brings its work home.
//
// Then a corrupt row: garbage written into its columns with sqlite3
// directly. `ls` shows it damaged, under its whole id, none of the
// garbage; merge and restart say it is damaged and to remove it; `rm`
// moves it to the trash.
func TestDatabaseHealsFromDisk(t *testing.T) {
	w := newWorld(t)
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("no sqlite3 (scripts/install-deps.sh installs it)")
	}
	w.ok("project", "add", w.repo)
	db := filepath.Join(w.home, "sandbar.db")
	// Everything before this is in the database file itself; from here
	// on, while the engine runs, the changes are in the WAL.
	if out, err := exec.Command("sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE);").CombinedOutput(); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, out)
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	if out, errOut, code := w.guestSh(id, "echo early > early.txt && git add early.txt && git commit -qm early && echo wip > wip.txt"); code != 0 {
		t.Fatalf("work: exit %d\n%s%s", code, out, errOut)
	}
	w.ok("rename", id, "Healed from disk")
	w.ok("stop", id)
	pid := w.enginePID()
	if !running(pid) {
		t.Fatal("no engine runs")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, 10*time.Second, "the killed engine to exit", func() bool { return !running(pid) })
	if err := os.Truncate(db+"-wal", 0); err != nil {
		t.Fatal(err)
	}
	// The WAL's index goes with it, as it does when the machine restarts:
	// kept, it points at frames the truncated WAL no longer has, and a
	// reader that opens while any other process still holds the file
	// (so that SQLite does not rebuild the index) reads short pages.
	if err := os.Remove(db + "-shm"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// The database has lost the session (else this test proves nothing).
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	_, lost := st.Session(context.Background(), id)
	st.Close()
	if lost == nil {
		t.Fatal("the session's row survived the truncated WAL: it was checkpointed before the kill")
	}

	out, errOut, code := w.run("", "ls", "--json")
	if code != 0 {
		t.Fatalf("ls: exit %d: %s", code, errOut)
	}
	var list []lsEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0].ID != id || list[0].Repo != w.repo || !strings.HasPrefix(list[0].Reason, "recovered:") {
		t.Fatalf("after the loss ls lists %+v; want %s, recovered, in %s", list, id, w.repo)
	}
	var titled []struct{ Title string }
	json.Unmarshal([]byte(out), &titled)
	if titled[0].Title != "Healed from disk" {
		t.Errorf("the adopted session's title is %q; want the one it was renamed to", titled[0].Title)
	}
	if !strings.Contains(errOut, "recovered 1 session the database had lost") {
		t.Errorf("ls does not say what was recovered: stderr %q", errOut)
	}
	if _, errOut, _ := w.run("", "ls"); strings.Contains(errOut, "recovered") {
		t.Errorf("the second ls says it again: %q", errOut)
	}
	w.ok("merge", id)
	for _, f := range []string{"early.txt", "wip.txt"} {
		w.git("cat-file", "-e", "sandbar/"+id+":"+f)
	}

	// A corrupt row.
	if out, err := exec.Command("sqlite3", db, "UPDATE sessions SET state = 'stXpped', limits = '{garbage' WHERE id = '"+id+"';").CombinedOutput(); err != nil {
		t.Fatalf("corrupt the row: %v\n%s", err, out)
	}
	got := w.session(id)
	if got.State != "damaged" || strings.Contains(got.Reason, "stXpped") || !strings.Contains(got.Reason, "sandbar rm "+id) {
		t.Errorf("the corrupt row reads %s %q; want damaged, saying to remove it, without the garbage", got.State, got.Reason)
	}
	if plain := w.ok("ls"); !strings.Contains(plain, id+" ") || strings.Contains(plain, "stXpped") || !strings.Contains(plain, "damaged") {
		t.Errorf("ls shows the corrupt row as:\n%s", plain)
	}
	for _, verb := range [][]string{{"merge", id}, {"restart", id}, {"changes", id}} {
		if _, errOut, code := w.run("", verb...); code == 0 || !strings.Contains(errOut, "damaged") || !strings.Contains(errOut, "sandbar rm "+id) {
			t.Errorf("sandbar %v on a damaged session: exit %d: %q", verb, code, errOut)
		}
	}
	w.ok("rm", id)
	if list := w.ls(); len(list) != 0 {
		t.Errorf("after rm, ls lists %+v", list)
	}
	if trash := w.ok("trash", "ls"); !strings.Contains(trash, id[:8]) {
		t.Errorf("the removed session is not in the trash:\n%s", trash)
	}
}
