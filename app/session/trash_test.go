package session

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/store"
)

// fakeNow is a clock a test moves by hand.
type fakeNow struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeNow) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeNow) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// trashedSession starts a session whose agent commits work and says so,
// and waits for it to end.
func trashedSession(t *testing.T, f *fixture) store.Session {
	t.Helper()
	agent := `echo work > work.txt && git add work.txt && git -c user.name=A -c user.email=a@example.com commit -qm work && echo committed`
	s, err := f.m.Start(context.Background(), Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", agent}}, MemoryMiB: 512, Prompt: "trash me"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.wait(t, s.ID); got.State != StateStopped {
		t.Fatalf("the session ended %s: %s", got.State, got.Reason)
	}
	return s
}

func sessionRefs(t *testing.T, f *fixture, projectID int64, id string) string {
	t.Helper()
	return git(t, f.paths.ProjectRepo(projectID), "for-each-ref", "--format=%(refname)", "refs/sandbar/sessions/"+id+"/")
}

// TestTrashRestore: a deleted session's folder and record go to the
// trash, out of every list, with its saved work kept; Restore brings it
// back with its logs and transcript, as it was.
func TestTrashRestore(t *testing.T) {
	clock := &fakeNow{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f := newFixtureWith(t, func(c *Config) { c.Now = clock.Now })
	ctx := context.Background()
	s := trashedSession(t, f)
	dir := f.paths.SessionDir(s.ID)
	os.WriteFile(dir.Transcript(), []byte(`{"type":"user","message":{"content":"trash me"}}`+"\n"), 0o600)
	logs, _ := f.m.Logs(ctx, s.ID, 0, 0)
	if len(logs) == 0 {
		t.Fatal("the session logged nothing")
	}
	if sessionRefs(t, f, s.ProjectID, s.ID) == "" {
		t.Fatal("the session saved no work in Sandbar's repository")
	}
	events := f.m.Subscribe(ctx, s.ID)

	// Its work is not in the repository: Remove refuses, as before.
	if err := f.m.Remove(ctx, s.ID, false); err == nil {
		t.Fatal("remove with unmerged work succeeded without force")
	}
	if err := f.m.Remove(ctx, s.ID, true); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Kind != EventRemoved {
			t.Errorf("event %+v, want removed", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no removed event")
	}
	if _, err := os.Stat(dir.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the session's folder is still in sessions/: %v", err)
	}
	in := f.paths.TrashedSessionDir(s.ID, clock.Now())
	if _, err := os.Stat(in.AgentLog()); err != nil {
		t.Errorf("the trash has no agent log: %v", err)
	}
	if !strings.HasPrefix(in.Path(), filepath.Join(f.paths.Home, "trash", s.ID+"-20260501T120000Z")) {
		t.Errorf("trashed to %s", in.Path())
	}
	if _, err := f.m.Get(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get a trashed session: %v, want ErrNotFound", err)
	}
	if ss, _ := f.m.List(ctx); len(ss) != 0 {
		t.Errorf("list shows the trash: %+v", ss)
	}
	if u, _ := f.m.DiskUsage(ctx); len(u) != 0 {
		t.Errorf("disk usage counts the trash as sessions: %v", u)
	}
	tr, err := f.m.Trash(ctx)
	if err != nil || len(tr) != 1 || tr[0].ID != s.ID || tr[0].Bytes <= 0 || !tr[0].Purge.Equal(clock.Now().Add(DefaultTrashKeep)) {
		t.Fatalf("trash: %+v, %v", tr, err)
	}
	if sessionRefs(t, f, s.ProjectID, s.ID) == "" {
		t.Error("the session's saved work was forgotten while it is in the trash")
	}
	clock.add(time.Hour)
	back, err := f.m.Restore(ctx, s.ID[:6])
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != s.ID || back.State != StateStopped || back.Prompt != "trash me" {
		t.Errorf("restored: %+v", back)
	}
	if got, _ := f.m.Logs(ctx, s.ID, 0, 0); len(got) != len(logs) {
		t.Errorf("restored with %d log lines, had %d", len(got), len(logs))
	}
	if tx, err := f.m.Transcript(ctx, s.ID); err != nil || len(tx) == 0 {
		t.Errorf("restored transcript: %+v, %v", tx, err)
	}
	if ch, err := f.m.Changes(ctx, s.ID); err != nil || ch.Ahead != 1 {
		t.Errorf("restored changes: %+v, %v", ch, err)
	}
	if tr, _ := f.m.Trash(ctx); len(tr) != 0 {
		t.Errorf("the trash after the restore: %+v", tr)
	}
	if _, err := f.m.Restore(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("restore one not in the trash: %v, want ErrNotFound", err)
	}
	if _, err := f.m.Merge(ctx, s.ID, MergeOptions{}); err != nil {
		t.Errorf("merge a restored session: %v", err)
	}
}

// TestTrashEmpties: the engine's tending empties what was deleted a week
// ago (by the Manager's clock), and EmptyTrash what it is asked to, with
// the folders and saved work.
func TestTrashEmpties(t *testing.T) {
	clock := &fakeNow{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f := newFixtureWith(t, func(c *Config) { c.Now = clock.Now })
	ctx := context.Background()
	old := trashedSession(t, f)
	if err := f.m.Remove(ctx, old.ID, true); err != nil {
		t.Fatal(err)
	}
	oldDir := f.paths.TrashedSessionDir(old.ID, clock.Now())
	clock.add(2 * 24 * time.Hour)
	young := trashedSession(t, f)
	if err := f.m.Remove(ctx, young.ID, true); err != nil {
		t.Fatal(err)
	}

	clock.add(5*24*time.Hour - time.Minute) // the old one: a minute short of a week
	if n, err := f.m.expireTrash(ctx); err != nil || n != 0 {
		t.Errorf("expire before the week: %d, %v", n, err)
	}
	clock.add(2 * time.Minute)
	events := f.m.Subscribe(ctx, "")
	f.m.TendTrash(ctx) // at once, as the engine does when it starts
	select {
	case ev := <-events:
		if ev.Kind != EventPurged || ev.Session != old.ID {
			t.Errorf("event %+v, want %s purged", ev, old.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the trash was not tended: no purged event")
	}
	if tr, _ := f.m.Trash(ctx); len(tr) != 1 || tr[0].ID != young.ID {
		t.Fatalf("the trash a week on: %+v, want only %s", tr, young.ID)
	}
	if _, err := os.Stat(oldDir.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the expired session's folder is still there: %v", err)
	}
	if refs := sessionRefs(t, f, old.ProjectID, old.ID); refs != "" {
		t.Errorf("the expired session's refs are kept: %s", refs)
	}

	// On request: by id; an unknown one is not found.
	if _, err := f.m.EmptyTrash(ctx, []string{"nosuchid"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty an unknown id: %v", err)
	}
	if n, err := f.m.EmptyTrash(ctx, nil); err != nil || n != 1 {
		t.Errorf("empty the trash: %d, %v", n, err)
	}
	if tr, _ := f.m.Trash(ctx); len(tr) != 0 {
		t.Errorf("the trash after emptying: %+v", tr)
	}
	if refs := sessionRefs(t, f, young.ProjectID, young.ID); refs != "" {
		t.Errorf("the emptied session's refs are kept: %s", refs)
	}
	if es, _ := os.ReadDir(f.paths.Trash()); len(es) != 0 {
		t.Errorf("the trash folder holds %d entries", len(es))
	}
}

// TestRestoreClearsRemoved: a session deleted while it ran stopped with
// the reason "removed"; back from the trash (Undo) it no longer says so
// (sandbar ls said "stopped  removed" after Undo).
func TestRestoreClearsRemoved(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	if err := f.m.Remove(ctx, s.ID, true); err != nil {
		t.Fatal(err)
	}
	back, err := f.m.Restore(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.Reason == ReasonRemoved {
		t.Errorf("Restore returned the reason %q", back.Reason)
	}
	got, err := f.m.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateStopped || got.Reason != ReasonStoppedByUser {
		t.Errorf("restored session: %s, %q; want stopped, %q", got.State, got.Reason, ReasonStoppedByUser)
	}
}
