package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/workspace"
)

// TestClientDrivesTheEngine: a window opened beside another engine starts,
// talks to, execs in and stops sessions through it, follows its events,
// and keeps following them when that engine goes and another comes.
func TestClientDrivesTheEngine(t *testing.T) {
	f := newFixture(t)
	srv, stop := serve(t, f)
	c := newClient(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.Subscribe(ctx, "")
	waitSubscribed(t, srv) // Subscribe returned once it was

	agent := `trap 'exit 143' TERM; while read -r line; do echo "heard: $line"; done`
	s, err := c.Start(ctx, session.Options{Repo: f.repo, Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", agent}}, MemoryMiB: 512, Prompt: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.env.Manager.Running()) != 1 || len(c.Local.Running()) != 0 {
		t.Fatalf("running: engine %d, client %d; want the engine to run it", len(f.env.Manager.Running()), len(c.Local.Running()))
	}
	waitEvent(t, events, s.ID, "running", func(ev session.Event) bool { return ev.Kind == session.EventState && ev.State == session.StateRunning })
	waitOutput(t, f, s.ID, "heard: first")
	if err := c.Chat(ctx, s.ID, "from the window"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, f, s.ID, "heard: from the window")

	var out bytes.Buffer
	res, err := c.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"cat", "README.md"}}, &out, nil)
	if err != nil || res.Code != 0 || out.String() != "hello\n" {
		t.Fatalf("exec: %v %+v %q", err, res, out.String())
	}
	got, err := c.Stop(ctx, s.ID)
	if err != nil || got.State != session.StateStopped || got.ExitCode == nil || *got.ExitCode != 143 {
		t.Fatalf("stop: %+v %v", got, err)
	}
	waitEvent(t, events, s.ID, "stopped", func(ev session.Event) bool { return ev.Kind == session.EventState && ev.State == session.StateStopped })
	// Reads come from the store, in this process (a stopped session's
	// lines are all in it).
	if lines, err := c.Logs(ctx, s.ID, 0, 0); err != nil || len(lines) == 0 {
		t.Errorf("client logs: %d lines, %v", len(lines), err)
	}

	// The engine goes; actions fail with what to do, events stay open.
	stop()
	if _, err := c.Restart(ctx, s.ID); err == nil {
		t.Error("restart with no engine succeeded")
	}
	// Another engine comes (here the same manager again): the same
	// subscription carries its events.
	srv, _ = serve(t, f)
	// Events between two engines are not seen (readers resync from the
	// store): wait for the subscription to reach the new one.
	waitSubscribed(t, srv)
	if _, err := c.Restart(ctx, s.ID); err != nil {
		t.Fatalf("restart through the new engine: %v", err)
	}
	waitEvent(t, events, s.ID, "running again", func(ev session.Event) bool { return ev.Kind == session.EventState && ev.State == session.StateRunning })
	if _, err := c.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	cancel()
	for range events {
	}
}

// TestClientReadsWorkThroughTheEngine: a window beside the engine sees a
// running session's changes, diffs and files through the engine (its own
// Manager runs no VM to ask), and a stopped one's from the saved work.
func TestClientReadsWorkThroughTheEngine(t *testing.T) {
	f := newFixture(t)
	serve(t, f)
	c := newClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agent := `printf 'hello\nagain\n' > README.md; echo new > added.txt; echo edited; while read -r l; do :; done`
	s, err := c.Start(ctx, session.Options{Repo: f.repo, Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", agent}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, f, s.ID, "edited")

	ch, err := c.Changes(ctx, s.ID)
	if err != nil || len(ch.Files) != 2 {
		t.Fatalf("live changes through the engine: %+v, %v; want README.md and added.txt", ch, err)
	}
	d, err := c.FileDiff(ctx, s.ID, workspace.FileChange{Path: "README.md", Status: "modified"})
	if err != nil || !strings.Contains(d, "+again") {
		t.Errorf("live diff through the engine: %q, %v", d, err)
	}
	before := time.Now()
	dir, when, err := c.Export(ctx, s.ID)
	if err != nil {
		t.Fatalf("export through the engine: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "added.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("the export lacks the uncommitted file: %q, %v", b, err)
	}
	if when.Before(before.Add(-time.Second)) {
		t.Errorf("the export is as of %v, before it was asked for (%v): the running session was not saved first", when, before)
	}
	if want := filepath.Join(f.env.Paths.Session(s.ID), "export"); dir != want {
		t.Errorf("export in %s, want %s", dir, want)
	}

	if _, err := c.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	// Stopped: read here, from the saved work.
	ch, err = c.Changes(ctx, s.ID)
	if err != nil || len(ch.Files) != 2 {
		t.Errorf("saved changes: %+v, %v", ch, err)
	}
	d, err = c.FileDiff(ctx, s.ID, workspace.FileChange{Path: "added.txt", Status: "untracked"})
	if err != nil || !strings.Contains(d, "+new") {
		t.Errorf("saved diff: %q, %v", d, err)
	}
	// Removing the session removes its read-only export too.
	if err := c.Remove(ctx, s.ID, true); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := os.Lstat(f.env.Paths.Session(s.ID)); !os.IsNotExist(err) {
		t.Errorf("the session's folder is still there after rm: %v", err)
	}
}
