package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestDiffStat: a session's saved work is summed against its base by git
// in Sandbar's repository, the same on a second ask (from the cache, for
// the same saved snapshot); a session that saved nothing yet says so.
func TestDiffStat(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", `printf 'a\nb\nc\n' > new.txt`}}})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	want := workspace.DiffStat{Files: 1, Added: 3}
	for try := range 2 {
		if got, err := f.m.DiffStat(ctx, s.ID); err != nil || got != want {
			t.Errorf("ask %d: DiffStat = %+v, %v; want %+v", try+1, got, err, want)
		}
	}
	f.m.mu.Lock()
	cached := len(f.m.diffStats)
	f.m.mu.Unlock()
	if cached != 1 {
		t.Errorf("%d diff stats cached after two asks for one save, want 1", cached)
	}

	running, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "sleep 600"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.m.Stop(context.Background(), running.ID) })
	f.until(t, running.ID, 30*time.Second, "running", func(x store.Session) bool { return x.State == StateRunning })
	if _, err := f.m.DiffStat(ctx, running.ID); !errors.Is(err, ErrNothingSaved) {
		t.Errorf("a running session that saved nothing: DiffStat error %v, want ErrNothingSaved", err)
	}
}
