package sessiontest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
)

func TestEnv(t *testing.T) {
	e := New(t)
	repo := e.Repo(t, "mon dépôt")
	s, err := e.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Agent: Shell("echo hi")})
	if err != nil {
		t.Fatal(err)
	}
	got := e.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	if got.ExitCode == nil || *got.ExitCode != 0 {
		t.Errorf("exit %v", got.ExitCode)
	}
	// A state reached before WaitState is called is found in the store.
	if again := e.WaitState(t, s.ID[:8], session.StateStopped, time.Second); again.ID != s.ID {
		t.Errorf("WaitState of a stopped session by its prefix returned %q", again.ID)
	}
}

// fatalTB records what Fatalf says and ends its goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestWaitStateSaysWhatItSaw: a state that does not come fails the test
// saying which was expected and which was last seen.
func TestWaitStateSaysWhatItSaw(t *testing.T) {
	e := New(t)
	repo := e.Repo(t, "repo")
	s, err := e.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Agent: Shell("echo up; while :; do read -r l || sleep 1; done")})
	if err != nil {
		t.Fatal(err)
	}
	e.WaitState(t, s.ID, session.StateRunning, 30*time.Second)
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.WaitState(f, s.ID, session.StateFailed, 200*time.Millisecond)
	}()
	<-done
	for _, want := range []string{"did not become failed within 200ms", "last seen running"} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("WaitState failed saying %q: want it to say %q", f.msg, want)
		}
	}
	if _, err := e.Manager.Stop(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
}
