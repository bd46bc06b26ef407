package session

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sandbar/app/store"
)

// slowStoreLock stands in for the Manager's storeMu while another
// session's batch is slow to write: the first Lock waits until a second
// caller has taken and given back the lock, or, when none comes (the
// sink lets no second batch past the first), until a while has passed.
// After each batch is written, and before the lock is given back, follow
// is called: a reader tailing the log as the store has it.
type slowStoreLock struct {
	mu     sync.Mutex
	follow func()

	count    sync.Mutex
	n        int
	once     sync.Once
	entered  chan struct{} // closed when the first caller waits
	overtook chan struct{} // closed when a second caller has written
}

func (s *slowStoreLock) Lock() {
	s.count.Lock()
	s.n++
	n := s.n
	s.count.Unlock()
	if n == 1 {
		close(s.entered)
		select {
		case <-s.overtook:
		case <-time.After(200 * time.Millisecond): // the slow write of another session
		}
	}
	s.mu.Lock()
}

func (s *slowStoreLock) Unlock() {
	s.follow()
	s.count.Lock()
	n := s.n
	s.count.Unlock()
	s.mu.Unlock()
	if n >= 2 {
		s.once.Do(func() { close(s.overtook) })
	}
}

// TestLogSinkFlushesInOrder: two flushes of one session at once (the
// flusher's tick and finish's) write their batches in the order their
// lines were logged, so a reader following the store with Logs(afterSeq)
// sees every line.
func TestLogSinkFlushesInOrder(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.AddProject(ctx, store.Project{Path: "/repo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, store.Session{ID: "s1", ProjectID: p.ID, State: StateRunning}); err != nil {
		t.Fatal(err)
	}

	var seen []int64
	after := int64(0)
	lock := &slowStoreLock{entered: make(chan struct{}), overtook: make(chan struct{})}
	lock.follow = func() {
		lines, err := st.Logs(ctx, "s1", after, 0)
		if err != nil {
			t.Error(err)
			return
		}
		for _, l := range lines {
			seen = append(seen, l.Seq)
			after = l.Seq
		}
	}
	l := newLogSink("s1", st, newHub(), slog.New(slog.DiscardHandler), lock)

	var wg sync.WaitGroup
	l.line("stdout", "first")
	wg.Add(1)
	go func() { defer wg.Done(); l.flush() }() // the flusher's tick
	<-lock.entered
	l.line("system", "second")
	wg.Add(1)
	go func() { defer wg.Done(); l.flush() }() // finish's
	wg.Wait()

	if fmt.Sprint(seen) != "[1 2]" {
		t.Errorf("a reader following the store saw lines %v, want [1 2]: a later batch was written before an earlier one", seen)
	}
}
