package engine

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// conformanceAgent commits a file, says so, and answers each message;
// SIGINT (an interrupt) it reports, and reads on.
const conformanceAgent = `echo new > added.txt && git add added.txt && git -c user.name=A -c user.email=a@example.com commit -qm add
echo ready
trap 'exit 143' TERM
trap 'intr=1; echo interrupted' INT
while :; do
	if read -r line; then echo "heard: $line"
	elif [ -n "$intr" ]; then intr= # dash's read ends on a trapped signal
	else break; fi
done`

// TestConformance runs one scenario through the engine's own Manager and
// through a client of that engine (engine.Client, over the socket): both
// are a session.Service, and a caller cannot tell them apart.
func TestConformance(t *testing.T) {
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
			conformance(t, f, tc.svc(t, f))
		})
	}
}

func conformance(t *testing.T, f *fixture, svc session.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events := svc.Subscribe(ctx, "")

	p, _, err := svc.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatalf("add project: %v", err)
	}
	if _, _, err := svc.AddProject(ctx, f.repo); !errors.Is(err, store.ErrExists) {
		t.Errorf("adding the project again: %v, want ErrExists", err)
	}
	// A folder that is no repository is refused as one, so the app can
	// word the fix by how the folder was given.
	if _, _, err := svc.AddProject(ctx, t.TempDir()); !errors.Is(err, workspace.ErrNotRepo) {
		t.Errorf("adding a plain folder: %v, want ErrNotRepo", err)
	}
	if ps, err := svc.Projects(ctx); err != nil || len(ps) != 1 || ps[0].ID != p.ID {
		t.Errorf("projects: %+v, %v", ps, err)
	}
	if b, err := svc.Branches(ctx, p.Name); err != nil || b.Current == "" || !slices.Contains(b.Names, b.Current) {
		t.Errorf("branches: %+v, %v; want the checked-out one among them", b, err)
	}
	if _, err := svc.Branches(ctx, "nosuchproject"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("branches of an unknown project: %v, want ErrNotFound", err)
	}

	s, err := svc.Start(ctx, session.Options{Project: p.Name, Agent: sessiontest.Shell(conformanceAgent), MemoryMiB: 512, Prompt: "first"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	waitEvent(t, events, s.ID, "running", func(ev session.Event) bool {
		return ev.Kind == session.EventState && ev.State == session.StateRunning
	})
	waitEvent(t, events, s.ID, "ready", func(ev session.Event) bool {
		return ev.Kind == session.EventLog && ev.Log.Stream == "stdout" && ev.Log.Text == "ready"
	})
	if got, err := svc.Get(ctx, s.ID[:8]); err != nil || got.ID != s.ID || got.State != session.StateRunning {
		t.Errorf("get by prefix: %+v, %v", got, err)
	}

	// A title from the prompt; a rename reaches every subscriber; a
	// title too long is refused as bad input, on either side.
	if s.Title != "first" {
		t.Errorf("the new session's title is %q, want its prompt's %q", s.Title, "first")
	}
	if got, err := svc.Rename(ctx, s.ID[:8], "  Fix the\nlogin bug "); err != nil || got.ID != s.ID || got.Title != "Fix the login bug" {
		t.Errorf("rename: %+v, %v; want the title on one line", got, err)
	}
	waitEvent(t, events, s.ID, "the rename", func(ev session.Event) bool {
		return ev.Kind == session.EventTitle && ev.Title == "Fix the login bug"
	})
	if got, err := svc.Get(ctx, s.ID); err != nil || got.Title != "Fix the login bug" {
		t.Errorf("after the rename: %+v, %v", got, err)
	}
	if _, err := svc.Rename(ctx, s.ID, strings.Repeat("x", session.MaxTitle+1)); !errors.Is(err, session.ErrBadOptions) {
		t.Errorf("a title too long: %v, want ErrBadOptions", err)
	}

	var out bytes.Buffer
	res, err := svc.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"cat", "README.md", "added.txt"}}, &out, nil)
	if err != nil || res.Code != 0 || out.String() != "hello\nnew\n" {
		t.Fatalf("exec: %+v, %v, printed %q", res, err, out.String())
	}
	if err := svc.Chat(ctx, s.ID, "from the test"); err != nil {
		t.Fatalf("chat: %v", err)
	}
	waitEvent(t, events, s.ID, "the agent hearing the chat", func(ev session.Event) bool {
		return ev.Kind == session.EventLog && ev.Log.Text == "heard: from the test"
	})

	if err := svc.Interrupt(ctx, s.ID); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	waitEvent(t, events, s.ID, "the agent taking SIGINT", func(ev session.Event) bool {
		return ev.Kind == session.EventLog && ev.Log.Text == "interrupted"
	})
	if got, err := svc.Get(ctx, s.ID); err != nil || got.State != session.StateRunning || got.Activity != session.ActivityWaiting || got.Reason != session.ReasonInterrupted {
		t.Errorf("after the interrupt: %s/%s %q, %v; want running, waiting, %q", got.State, got.Activity, got.Reason, err, session.ReasonInterrupted)
	}
	if err := svc.Chat(ctx, s.ID, "after the interrupt"); err != nil {
		t.Fatalf("chat after the interrupt: %v", err)
	}
	waitEvent(t, events, s.ID, "the agent hearing the chat after the interrupt", func(ev session.Event) bool {
		return ev.Kind == session.EventLog && ev.Log.Text == "heard: after the interrupt"
	})

	ch, err := svc.Changes(ctx, s.ID)
	if err != nil || ch.Ahead != 1 || len(ch.Files) != 1 || ch.Files[0].Path != "added.txt" {
		t.Errorf("live changes: %+v, %v; want added.txt, one commit ahead", ch, err)
	}

	// Commit now: nothing to commit yet; then work left uncommitted is
	// committed on the branch, and the clone takes the commit.
	if _, err := svc.Commit(ctx, s.ID, ""); !errors.Is(err, session.ErrNothingToCommit) || !strings.Contains(err.Error(), "nothing to commit: the work is already saved at ") {
		t.Errorf("commit with nothing to commit: %v, want ErrNothingToCommit", err)
	}
	if res, err := svc.Exec(ctx, s.ID, session.ExecRequest{Argv: []string{"sh", "-c", "echo wip > wip.txt"}}, nil, nil); err != nil || res.Code != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	if c, err := svc.Commit(ctx, s.ID[:8], "wip from the test"); err != nil || c.Commit == "" || c.Subject != "wip from the test" || !slices.Equal(c.Files, []string{"wip.txt"}) || c.NotInClone != "" || c.Branch != s.Branch {
		t.Errorf("commit: %+v, %v", c, err)
	}
	if ch, err := svc.Changes(ctx, s.ID); err != nil || ch.Ahead != 2 {
		t.Errorf("changes after the commit: %+v, %v; want two commits ahead", ch, err)
	}

	stopped, err := svc.Stop(ctx, s.ID)
	if err != nil || stopped.State != session.StateStopped || stopped.ExitCode == nil || *stopped.ExitCode != 143 {
		t.Fatalf("stop: %+v, %v", stopped, err)
	}
	waitEvent(t, events, s.ID, "stopped", func(ev session.Event) bool {
		return ev.Kind == session.EventState && ev.State == session.StateStopped
	})
	if ch, err := svc.Changes(ctx, s.ID); err != nil || ch.Ahead != 2 {
		t.Errorf("saved changes: %+v, %v", ch, err)
	}

	if tg, err := svc.MergeTarget(ctx, s.ID); err != nil || tg.Branch != s.Branch || tg.Nothing != "" || tg.BranchDone != "" {
		t.Errorf("merge target before merging: %+v, %v", tg, err)
	}
	merged, err := svc.Merge(ctx, s.ID, session.MergeOptions{})
	if err != nil || !merged.Created || merged.Commit == "" {
		t.Fatalf("merge: %+v, %v", merged, err)
	}
	if tg, err := svc.MergeTarget(ctx, s.ID); err != nil || tg.BranchDone == "" {
		t.Errorf("merge target after creating the branch: %+v, %v; want BranchDone to say why there is nothing more", tg, err)
	}
	if got := sessiontest.Git(t, f.repo, "rev-parse", s.Branch); got != merged.Commit {
		t.Errorf("the repository's %s is at %s, the merge said %s", s.Branch, got, merged.Commit)
	}

	if err := svc.Remove(ctx, s.ID, false); err != nil {
		t.Fatalf("remove a merged session: %v", err)
	}
	waitEvent(t, events, s.ID, "removed", func(ev session.Event) bool { return ev.Kind == session.EventRemoved })
	if ss, err := svc.List(ctx); err != nil || len(ss) != 0 {
		t.Errorf("sessions after remove: %+v, %v", ss, err)
	}

	// Removed is in the trash, whence it comes back as it was, and goes
	// for good when the trash is emptied.
	if tr, err := svc.Trash(ctx); err != nil || len(tr) != 1 || tr[0].ID != s.ID || tr[0].Bytes <= 0 {
		t.Fatalf("the trash: %+v, %v", tr, err)
	}
	back, err := svc.Restore(ctx, s.ID)
	if err != nil || back.ID != s.ID || back.State != session.StateStopped {
		t.Fatalf("restore: %+v, %v", back, err)
	}
	waitEvent(t, events, s.ID, "restored", func(ev session.Event) bool {
		return ev.Kind == session.EventState && ev.State == session.StateStopped
	})
	if ss, err := svc.List(ctx); err != nil || len(ss) != 1 {
		t.Errorf("sessions after restore: %+v, %v", ss, err)
	}
	if lines, err := svc.Logs(ctx, s.ID, 0, 0); err != nil || len(lines) == 0 {
		t.Errorf("a restored session's log: %d lines, %v", len(lines), err)
	}
	if _, err := svc.Restore(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("restore one not in the trash: %v, want ErrNotFound", err)
	}
	if err := svc.Remove(ctx, s.ID, false); err != nil {
		t.Fatalf("remove again: %v", err)
	}
	if n, err := svc.EmptyTrash(ctx, []string{s.ID}); err != nil || n != 1 {
		t.Fatalf("empty the trash: %d, %v", n, err)
	}
	waitEvent(t, events, s.ID, "purged", func(ev session.Event) bool { return ev.Kind == session.EventPurged })
	if tr, err := svc.Trash(ctx); err != nil || len(tr) != 0 {
		t.Errorf("the trash once emptied: %+v, %v", tr, err)
	}
	if _, err := svc.EmptyTrash(ctx, []string{s.ID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("empty one not in the trash: %v, want ErrNotFound", err)
	}
	if ss, err := svc.List(ctx); err != nil || len(ss) != 0 {
		t.Errorf("sessions after remove: %+v, %v", ss, err)
	}

	// An unknown session is not found, on either side of the socket.
	if _, err := svc.Get(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get a removed session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Stop(ctx, "nosuchsession"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stop an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Exec(ctx, "nosuchsession", session.ExecRequest{Argv: []string{"true"}}, nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("exec in an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Rename(ctx, "nosuchsession", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rename an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := svc.Commit(ctx, "nosuchsession", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("commit an unknown session: %v, want ErrNotFound", err)
	}
	if err := svc.Interrupt(ctx, "nosuchsession"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("interrupt an unknown session: %v, want ErrNotFound", err)
	}
	if err := svc.Chat(ctx, "nosuchsession", "hello?"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("chat with an unknown session: %v, want ErrNotFound", err)
	}
}
