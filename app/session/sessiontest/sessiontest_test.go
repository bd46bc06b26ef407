package sessiontest

import (
	"context"
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
}
