package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/vm"
	"sandbar/vm/vmtest"
)

func TestSessionEndToEndInProcess(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// The user has work in progress: it must survive everything.
	os.WriteFile(filepath.Join(f.repo, "wip.txt"), []byte("uncommitted\n"), 0o644)
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("hello, edited\n"), 0o644)
	before := treeHash(t, f.repo)

	events := f.m.Subscribe(ctx, "")
	// The project's sessions get OTHER in their environment; the model
	// API's key is brokered, so the agent holds a stand-in for it.
	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	if err := f.m.SetProjectSecrets(ctx, f.repo, []string{"OTHER"}); err != nil {
		t.Fatal(err)
	}
	agent := `echo "key is $ANTHROPIC_API_KEY"; echo "$OTHER" >&2; echo change > agent.txt; git add agent.txt; git commit -qm "agent work"; echo done`
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", agent}}, CPUs: 1, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != StateProvisioning || s.Branch != "sandbar/"+s.ID {
		t.Errorf("started: %+v", s)
	}
	s = f.wait(t, s.ID)
	if s.State != StateStopped || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("final: state %s exit %v reason %q", s.State, s.ExitCode, s.Reason)
	}
	for _, k := range []string{"clone", "boot", "ready", "agent"} {
		if _, ok := s.Timings[k]; !ok {
			t.Errorf("no %s timing: %v", k, s.Timings)
		}
	}

	// Logs: redacted in the store, the log file and the events.
	lines, err := f.m.Logs(ctx, s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&all, "%s %s\n", l.Stream, l.Text)
	}
	if !strings.Contains(all.String(), "stdout key is sandbar-brokered-") || !strings.Contains(all.String(), "stderr [redacted:OTHER]") {
		t.Errorf("stored log:\n%s", all.String())
	}
	file, _ := os.ReadFile(f.paths.SessionDir(s.ID).AgentLog())
	for _, where := range []string{all.String(), string(file)} {
		if strings.Contains(where, secretValue) || strings.Contains(where, "other-value-42") {
			t.Errorf("a secret leaked:\n%s", where)
		}
	}
	sawLog, sawStopped := false, false
	timeout := time.After(5 * time.Second)
	for !sawStopped {
		select {
		case ev := <-events:
			if ev.Kind == EventLog && strings.Contains(ev.Log.Text, "[redacted:OTHER]") {
				sawLog = true
			}
			if ev.Kind == EventLog && (strings.Contains(ev.Log.Text, secretValue) || strings.Contains(ev.Log.Text, "other-value-42")) {
				t.Error("a secret reached a subscriber")
			}
			if ev.Kind == EventState && ev.State == StateStopped {
				sawStopped = true
			}
		case <-timeout:
			t.Fatal("no stopped event")
		}
	}
	if !sawLog {
		t.Error("no redacted log event")
	}

	// Merge: the branch with the agent's commit; the user's tree untouched.
	if err := f.m.Remove(ctx, s.ID, false); err == nil {
		t.Error("remove succeeded with unmerged commits")
	}
	res, err := f.m.Merge(ctx, s.ID, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, f.repo, "log", "-1", "--format=%s", s.Branch); got != "agent work" {
		t.Errorf("merged branch head: %q", got)
	}
	if res.Commit == "" {
		t.Error("merge result has no commit")
	}
	if after := treeHash(t, f.repo); after != before {
		t.Error("the user's working tree changed")
	}
	if err := f.m.Remove(ctx, s.ID, false); err != nil {
		t.Fatalf("remove after merge: %v", err)
	}
	if _, err := os.Stat(f.paths.Session(s.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("session dir left: %v", err)
	}
	if _, err := f.m.Get(ctx, s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get removed: %v", err)
	}
}

func TestStopChatExec(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A custom agent that echoes its input until told to quit.
	agent := `trap 'echo got TERM; exit 143' TERM; while read -r line; do echo "heard: $line"; done`
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", agent}}, MemoryMiB: 512, Prompt: "first"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "heard: first")
	if err := f.m.Chat(ctx, s.ID[:6], "second message"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "heard: second message")

	var out bytes.Buffer
	res, err := f.m.Exec(ctx, s.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "cat README.md; echo $ANTHROPIC_API_KEY"}}, &out, nil)
	if err != nil || res.Code != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	// The brokered key is a stand-in in the VM, in execs too.
	if !strings.HasPrefix(out.String(), "hello\nsandbar-brokered-") || strings.Contains(out.String(), secretValue) {
		t.Errorf("exec output %q", out.String())
	}

	got, err := f.m.Stop(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateStopped || got.ExitCode == nil || *got.ExitCode != 143 || got.Reason != "stopped by the user" {
		t.Errorf("after stop: %s exit %v %q", got.State, got.ExitCode, got.Reason)
	}
	if err := f.m.Chat(ctx, s.ID, "late"); !errors.Is(err, ErrState) {
		t.Errorf("chat after stop: %v", err)
	}
	if n := f.hv.Booted()[0].Sys.Poweroffs(); n != 1 {
		t.Errorf("poweroffs %d", n)
	}

	// Restart boots again on the same workspace.
	if _, err := f.m.Restart(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if cur := f.waitState(t, s.ID, 30*time.Second, "the restarted session running (or ended)", func(cur store.Session) bool {
		return cur.State == StateRunning || !Live(cur.State)
	}); cur.State != StateRunning {
		t.Fatalf("restart: %s %q", cur.State, cur.Reason)
	}
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}

func TestFailedAgentAndBadInputs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	s = f.wait(t, s.ID)
	if s.State != StateFailed || s.ExitCode == nil || *s.ExitCode != 3 || !strings.Contains(s.Reason, "code 3") {
		t.Errorf("failed agent: %s %v %q", s.State, s.ExitCode, s.Reason)
	}

	notRepo := t.TempDir()
	bare := filepath.Join(t.TempDir(), "bare.git")
	exec.Command("git", "init", "-q", "--bare", bare).Run()
	before, _ := f.m.List(ctx)
	for name, o := range map[string]Options{
		"not a repo":    {Repo: notRepo},
		"bare":          {Repo: bare},
		"no project":    {Project: "nope"},
		"too many cpus": {Repo: f.repo, CPUs: 64},
		"tiny memory":   {Repo: f.repo, MemoryMiB: 16},
		"over budget":   {Repo: f.repo, MemoryMiB: 12 << 10},
	} {
		if _, err := f.m.Start(ctx, o); err == nil {
			t.Errorf("%s: started", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 12 << 10}); !errors.Is(err, ErrBudget) {
		t.Errorf("budget: %v", err)
	}
	after, _ := f.m.List(ctx)
	if len(after) != len(before) {
		t.Errorf("a refused start left a session: %d → %d", len(before), len(after))
	}
	for _, op := range []func() error{
		func() error { _, err := f.m.Stop(ctx, "zzzz"); return err },
		func() error { return f.m.Chat(ctx, "zzzz", "x") },
		func() error { return f.m.Remove(ctx, "zzzz", false) },
	} {
		if err := op(); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown id: %v", err)
		}
	}

	// Claude Code without credentials is refused before anything starts.
	m2, err := New(ctx, Config{Paths: f.paths, Store: f.st, Hypervisor: f.hv, Secrets: mapSecrets{},
		Image: f.m.cfg.Image, HostMemory: 16 << 30, HostCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Start(ctx, Options{Repo: f.repo}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("claude without a key: %v", err)
	}
}

func TestRecoverInterrupted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	// A session a dead process was running.
	dead := store.Owner{PID: 999999, Start: 1, Host: f.m.owner.Host}
	s := store.Session{ID: "deadbeef01", ProjectID: p.ID, Branch: "sandbar/deadbeef01", State: StateRunning, Owner: dead,
		Agent: store.Agent{Command: "sh", Kind: "custom"}, Limits: store.Limits{CPUs: 1, MemoryMiB: 512, DiskGiB: 1}}
	if err := f.st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(f.paths.SessionDir(s.ID).LegacyWorkspace(), 0o755)
	// The dead engine was taking a save in.
	spool := f.paths.SessionDir(s.ID).SaveSpool()
	if err := os.WriteFile(spool, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	m2, err := New(ctx, Config{Paths: f.paths, Store: f.st, Hypervisor: f.hv, Secrets: mapSecrets{}, Image: f.m.cfg.Image, HostMemory: 16 << 30, HostCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	// A Manager alone recovers nothing: it may be a process that is not
	// the engine (a CLI command, a second window).
	if got, err := m2.Get(ctx, s.ID); err != nil || got.State != StateRunning {
		t.Fatalf("after New: %s %v; want it left running for the engine to recover", got.State, err)
	}
	if err := m2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := m2.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateInterrupted || !strings.Contains(got.Reason, "restart") {
		t.Errorf("recovered: %s %q", got.State, got.Reason)
	}
	if _, err := os.Stat(f.paths.SessionDir(s.ID).LegacyWorkspace()); err != nil {
		t.Errorf("workspace gone: %v", err)
	}
	if _, err := os.Stat(spool); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the half-taken save %s is still there: %v", spool, err)
	}
	_ = vm.MiB
}

func TestManySessionsAndChattyAgent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	events := f.m.Subscribe(ctx, "")
	const n, lines = 3, 5000
	var ids []string
	for i := 0; i < n; i++ {
		s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
			Agent: AgentSpec{Command: "sh", Args: []string{"-c", fmt.Sprintf("seq 1 %d", lines)}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	for _, id := range ids {
		if s := f.wait(t, id); s.State != StateStopped {
			t.Errorf("%s: %s %q", id, s.State, s.Reason)
		}
	}
	// The subscriber reads nothing until every session stopped, so its
	// queue overflows: every line is either delivered or counted in an
	// EventDropped, and the store has them all.
	counts := map[string]int{}
	ended, dropped := 0, 0
	timeout := time.After(20 * time.Second)
	for ended < n {
		select {
		case ev := <-events:
			if ev.Kind == EventLog && ev.Log.Stream == "stdout" {
				counts[ev.Session]++
			}
			if ev.Kind == EventDropped {
				dropped += ev.Dropped
			}
			if ev.Kind == EventState && ev.State == StateStopped {
				ended++
			}
		case <-timeout:
			t.Fatalf("events: %v, %d ended", counts, ended)
		}
	}
	got := 0
	for _, id := range ids {
		got += counts[id]
		if counts[id] > lines {
			t.Errorf("%s: subscriber got %d lines, more than the %d written", id, counts[id], lines)
		}
	}
	// Dropped events may be system lines or stats as well as stdout.
	if got > n*lines || got+dropped < n*lines {
		t.Errorf("subscriber got %d stdout lines and %d events dropped; want every one of the %d lines delivered or counted", got, dropped, n*lines)
	}
	for _, id := range ids {
		stored, _ := f.m.Logs(ctx, id, 0, 100000)
		out := 0
		for _, l := range stored {
			if l.Stream == "stdout" {
				out++
			}
		}
		if out != lines {
			t.Errorf("%s: store has %d lines, want %d", id, out, lines)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Marked waiting after the idle time, and still running.
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, IdleTimeout: 300 * time.Millisecond,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo hi; sleep 30"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitState(t, s.ID, 20*time.Second, "the session marked waiting, idle", func(cur store.Session) bool {
		return cur.State == StateRunning && cur.Activity == ActivityWaiting && strings.Contains(cur.Reason, "idle")
	})
	f.m.Stop(ctx, s.ID)

	// Stopped at the idle time when asked to.
	s, err = f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, IdleTimeout: 300 * time.Millisecond, IdleStop: true,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "sleep 30"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := f.wait(t, s.ID)
	if got.State != StateStopped || !strings.Contains(got.Reason, "idle") {
		t.Errorf("idle stop: %s %q", got.State, got.Reason)
	}

	// A wall-clock timeout stops it too.
	s, _ = f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Timeout: 500 * time.Millisecond,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "sleep 30"}}})
	got = f.wait(t, s.ID)
	if got.State != StateStopped || !strings.Contains(got.Reason, "timed out") {
		t.Errorf("timeout: %s %q", got.State, got.Reason)
	}
}

// TestSessionSaysLFSFilesArePointers: a repository with Git LFS files
// gets a session whose log says they are pointer files there.
func TestSessionSaysLFSFilesArePointers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	os.WriteFile(filepath.Join(f.repo, ".gitattributes"), []byte("*.bin filter=lfs diff=lfs merge=lfs -text\n"), 0o644)
	os.WriteFile(filepath.Join(f.repo, "weights.bin"), []byte("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n"), 0o644)
	git(t, f.repo, "add", ".")
	git(t, f.repo, "commit", "-qm", "lfs")
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "true"}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "1 Git LFS file is a pointer file in this session (weights.bin)")
	f.wait(t, s.ID)
}

// reaper is a thin OrphanReaper over the fake hypervisor that records the
// VM directories it was asked to end.
type reaper struct {
	*vmtest.Hypervisor
	mu   sync.Mutex
	dirs []string
}

func (r *reaper) ReapOrphan(_ context.Context, dir string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirs = append(r.dirs, dir)
	return false, nil
}

// TestRecoverComparesAndSets: recovery changes a session only if it is
// still as it was read (same owner, still live), and ends its VM only
// then: a session restarted meanwhile by another process is left alone.
func TestRecoverComparesAndSets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	r := &reaper{Hypervisor: f.hv}
	m2, err := New(ctx, Config{Paths: f.paths, Store: f.st, Hypervisor: r, Secrets: mapSecrets{}, Image: f.m.cfg.Image, HostMemory: 16 << 30, HostCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	dead := store.Owner{PID: 999999, Start: 1, Host: f.m.owner.Host}
	other := store.Owner{PID: 999998, Start: 2, Host: f.m.owner.Host}
	tests := []struct {
		name   string
		change func(*store.Session)
		want   store.State
		reaped bool
	}{
		{"unchanged", func(*store.Session) {}, StateInterrupted, true},
		{"another owner since", func(s *store.Session) { s.Owner = other }, StateRunning, false},
		{"stopped since", func(s *store.Session) { s.State = StateStopped }, StateStopped, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("deadbeef%02d", i)
			s := store.Session{ID: id, ProjectID: p.ID, Branch: "sandbar/" + id, State: StateRunning, Owner: dead,
				Agent: store.Agent{Command: "sh", Kind: "custom"}, Limits: store.Limits{CPUs: 1, MemoryMiB: 512, DiskGiB: 1}}
			if err := f.st.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			read, err := f.st.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.UpdateSession(ctx, id, func(s *store.Session) error { tt.change(s); return nil }); err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			r.dirs = nil
			r.mu.Unlock()
			if err := m2.recoverSession(ctx, read); err != nil {
				t.Fatal(err)
			}
			got, err := f.st.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want {
				t.Errorf("state %s, want %s", got.State, tt.want)
			}
			r.mu.Lock()
			reaped := len(r.dirs) > 0
			r.mu.Unlock()
			if reaped != tt.reaped {
				t.Errorf("its VM reaped: %v, want %v", reaped, tt.reaped)
			}
		})
	}
}

// TestVMKilledSaysHowToGoOn: a VM that ends under a running session
// (QEMU killed, say) fails the session with a reason that says its disk
// is kept and how to go on, before any console lines.
func TestVMKilledSaysHowToGoOn(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 100"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	booted := f.hv.Booted()
	if len(booted) != 1 {
		t.Fatalf("%d machines booted, want 1", len(booted))
	}
	booted[0].Kill()
	got := f.wait(t, s.ID)
	want := "its disk is kept: `sandbar restart " + short(s.ID) + "` goes on from where it was"
	if got.State != StateFailed || !strings.HasPrefix(got.Reason, "the VM stopped unexpectedly") || !strings.Contains(strings.SplitN(got.Reason, "\n", 2)[0], want) {
		t.Errorf("after the VM was killed: %s %q, want its first line to say %q", got.State, got.Reason, want)
	}
}
