package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/store"
)

// TestRestartTwiceAtOnce: two Restarts of one session at once (a double
// click, or the UI and the CLI) boot one VM: one succeeds, the other is
// refused with ErrState, and the session ends running.
func TestRestartTwiceAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agent := AgentSpec{Command: "sh", Args: []string{"-c", `trap 'exit 143' TERM; echo up; while :; do read -r line || sleep 1; done`}}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	booted := len(f.hv.Booted())

	var wg sync.WaitGroup
	errs := make([]error, 2)
	go1 := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-go1
			_, errs[i] = f.m.Restart(ctx, s.ID)
		}()
	}
	close(go1)
	wg.Wait()

	var ok, refused int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrState):
			refused++
			if !strings.Contains(err.Error(), "already starting") && !strings.Contains(err.Error(), "already running") {
				t.Errorf("the refused Restart says %q: want it to say the session is already starting (or running)", err)
			}
		default:
			t.Errorf("Restart: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("of two Restarts at once %d succeeded and %d were refused (%v): want one of each", ok, refused, errs)
	}
	cur := f.waitState(t, s.ID, 30*time.Second, "the restarted session running (or ended)", func(cur store.Session) bool {
		return cur.State == StateRunning || !Live(cur.State)
	})
	if cur.State != StateRunning {
		t.Fatalf("after two Restarts the session is %s (%q), want running", cur.State, cur.Reason)
	}
	if n := len(f.hv.Booted()) - booted; n != 1 {
		t.Errorf("two Restarts booted %d VMs, want 1", n)
	}
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}

// TestRestartWithoutItsDisk: a session whose scratch disk was deleted is
// not booted again from the beginning (the agent would start over and its
// next save would hide the earlier one): Restart refuses with
// ErrScratchGone, names the disk, where its saved work is and the choice,
// and boots nothing. RestartFromSaved then continues in a new clone at
// the saved branch (with the work the stop auto-committed), never at the
// commit it started from, and the log says which.
func TestRestartWithoutItsDisk(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agent := AgentSpec{Command: "sh", Args: []string{"-c", `[ -e w.txt ] || { echo work > w.txt; git add w.txt; git commit -qm work; echo wip > wip.txt; }; trap 'exit 143' TERM; echo up; while :; do read -r line || sleep 1; done`}}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	scratch := f.m.cfg.Paths.SessionDir(s.ID).Scratch()
	if err := os.Remove(scratch); err != nil {
		t.Fatalf("the session's scratch disk: %v", err)
	}
	booted := len(f.hv.Booted())
	_, err = f.m.Restart(ctx, s.ID)
	if !errors.Is(err, ErrState) || !errors.Is(err, ErrScratchGone) {
		t.Fatalf("Restart without the disk: %v, want ErrScratchGone", err)
	}
	for _, want := range []string{"scratch", "is gone", "saved work is kept", "sandbar merge", "sandbar restart --from-saved", "deletes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Restart's error %q does not say %q", err, want)
		}
	}
	if n := len(f.hv.Booted()); n != booted {
		t.Errorf("Restart booted a VM (%d boots, was %d)", n, booted)
	}

	// The in-process guest's copy of its workspace stands for the layer
	// on the scratch disk: it went with the disk.
	if err := os.RemoveAll(filepath.Join(f.m.cfg.Paths.SessionDir(s.ID).VMDir(), "vmtest-workspace")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.RestartFromSaved(ctx, s.ID); err != nil {
		t.Fatalf("RestartFromSaved: %v", err)
	}
	waitFor(t, f, s.ID, "continuing from its last saved work")
	f.waitState(t, s.ID, 30*time.Second, "the session running from its saved work", func(cur store.Session) bool { return cur.State == StateRunning })
	mr, unlock, err := f.m.mirror(ctx, s.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	saved, ok := mr.Saved(ctx, s.ID)
	unlock()
	if !ok || saved.Branch == f.m.baseCommit(s) {
		t.Fatalf("the session's saved work: %+v (ok %v), want a branch past its base", saved, ok)
	}
	var out strings.Builder
	res, err := f.m.Exec(ctx, s.ID, ExecRequest{Argv: []string{"sh", "-c", "git rev-parse HEAD && cat w.txt"}}, &out, &out)
	if err != nil || res.Code != 0 {
		t.Fatalf("exec in the restarted clone: %v %+v: %s", err, res, out.String())
	}
	if got, want := out.String(), saved.Branch+"\nwork\n"; got != want {
		t.Errorf("the new clone's HEAD and w.txt: %q, want the saved branch %s and its file", got, saved.Branch)
	}
	if _, err := f.m.RestartFromSaved(ctx, s.ID); !errors.Is(err, ErrState) {
		t.Errorf("RestartFromSaved of a running session: %v, want ErrState", err)
	}
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}
