package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// TestConformanceSync runs Sync through the engine's own Manager and
// through a client of that engine: the person's newer branch reaches the
// running clone, a merge there answers with the clone's new HEAD, and
// the result reads the same on both sides.
func TestConformanceSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  func(t *testing.T, f *fixture) session.Service
	}{
		{"manager", func(t *testing.T, f *fixture) session.Service { return f.env.Manager }},
		{"engine client", func(t *testing.T, f *fixture) session.Service {
			serve(t, f)
			return newClient(t, f)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			conformanceSync(t, f, tc.svc(t, f))
		})
	}
}

func conformanceSync(t *testing.T, f *fixture, svc session.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events := svc.Subscribe(ctx, "")
	s, err := svc.Start(ctx, session.Options{Repo: f.repo, Agent: sessiontest.Shell(conformanceAgent), MemoryMiB: 512})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	waitEvent(t, events, s.ID, "ready", func(ev session.Event) bool {
		return ev.Kind == session.EventLog && ev.Log.Stream == "stdout" && ev.Log.Text == "ready"
	})
	branch := sessiontest.Git(t, f.repo, "symbolic-ref", "--short", "HEAD")
	os.WriteFile(filepath.Join(f.repo, "person.txt"), []byte("person\n"), 0o644)
	sessiontest.Git(t, f.repo, "add", "person.txt")
	sessiontest.Git(t, f.repo, "commit", "-qm", "person's file")
	mine := sessiontest.Git(t, f.repo, "rev-parse", "HEAD")

	res, err := svc.Sync(ctx, s.ID[:8], session.SyncFetch)
	if err != nil || res.Branch != branch || res.Ref != "origin/"+branch || res.Commit != mine || res.Behind != 1 || res.Ahead != 1 || res.Conflicted() {
		t.Fatalf("sync: %+v, %v; want origin/%s at %s, 1 behind and 1 ahead", res, err, branch, mine)
	}
	res, err = svc.Sync(ctx, s.ID, session.SyncMerge)
	if err != nil || res.Mode != session.SyncMerge || len(res.Head) != 40 || res.Conflicted() {
		t.Fatalf("sync --merge: %+v, %v", res, err)
	}
	if _, err := svc.Sync(ctx, "nosuchsession", session.SyncFetch); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("sync an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Sync(ctx, s.ID, "squash"); err == nil {
		t.Error("an unknown sync mode was taken")
	}
	if _, err := svc.Stop(ctx, s.ID); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := svc.Sync(ctx, s.ID, session.SyncFetch); !errors.Is(err, session.ErrState) {
		t.Errorf("sync a stopped session: %v, want ErrState", err)
	}
}
