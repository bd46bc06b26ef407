package engine

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"sandbar/app/session"
	"sandbar/app/store"
)

// TestOnlyTheEngineRecovers: a session whose owner died is marked
// interrupted by the process that becomes the engine, in Listen, and by
// no other: not by a Manager alone (a CLI command's, a second window's),
// nor by a Listen that finds another engine holding the lock.
func TestOnlyTheEngineRecovers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.env.Manager.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	s := store.Session{ID: "deadbeef01", ProjectID: p.ID, Branch: "sandbar/deadbeef01", State: session.StateRunning,
		Owner: store.Owner{PID: 999999, Start: 1, Host: host}, Agent: store.Agent{Command: "sh", Kind: "custom"},
		Limits: store.Limits{CPUs: 1, MemoryMiB: 512, DiskGiB: 1}}
	if err := f.env.Store.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	state := func() store.State {
		t.Helper()
		got, err := f.env.Store.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.State
	}

	c := newClient(t, f) // a Manager of a process that is not the engine
	if got := state(); got != session.StateRunning {
		t.Fatalf("a client's Manager changed the session to %s", got)
	}
	if got, err := c.Get(ctx, s.ID); err != nil || got.State != session.StateRunning {
		t.Fatalf("a client's read: %s, %v", got.State, err)
	}

	// Another process holds the lock: this one does not become the
	// engine, and changes nothing.
	lock, err := os.OpenFile(f.env.Paths.EngineLock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(ctx, f.env.Paths, f.env.Manager, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("Listen beside another engine: %v, want ErrRunning", err)
	}
	if got := state(); got != session.StateRunning {
		t.Fatalf("a Listen that lost the lock changed the session to %s", got)
	}
	lock.Close()

	// The engine recovers it, before it serves anyone.
	serve(t, f)
	if got := state(); got != session.StateInterrupted {
		t.Fatalf("after the engine started the session is %s, want %s", got, session.StateInterrupted)
	}
}

// TestClientReadsRecovered: a client that reads a session whose owner
// died reaches the engine (which main's dialer starts when none runs, and
// which recovers before it answers) and reads it interrupted.
func TestClientReadsRecovered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.env.Manager.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	s := store.Session{ID: "deadbeef02", ProjectID: p.ID, Branch: "sandbar/deadbeef02", State: session.StateRunning,
		Owner: store.Owner{PID: 999999, Start: 1, Host: host}, Agent: store.Agent{Command: "sh", Kind: "custom"},
		Limits: store.Limits{CPUs: 1, MemoryMiB: 512, DiskGiB: 1}}
	if err := f.env.Store.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, f)
	started := 0
	c.Engine = func(ctx context.Context) (*Remote, error) {
		if r, err := Dial(ctx, f.env.Paths); err == nil {
			return r, nil
		}
		started++
		serve(t, f) // as main's dialer runs `sandbar serve`
		return Dial(ctx, f.env.Paths)
	}
	got, err := c.Get(ctx, s.ID)
	if err != nil || got.State != session.StateInterrupted {
		t.Fatalf("a client's read of a session whose owner died: %s, %v; want %s", got.State, err, session.StateInterrupted)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 1 || list[0].State != session.StateInterrupted {
		t.Fatalf("a client's list: %+v, %v", list, err)
	}
	if started != 1 {
		t.Errorf("the engine was started %d times, want once", started)
	}
}
