package session

import (
	"context"
	"errors"
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
