package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
)

// TestBaseDisksShared: sessions at one commit boot on one base disk; a
// base disk no session uses any more is deleted, the newest kept.
func TestBaseDisksShared(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	start := func() string {
		t.Helper()
		s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "true"}, CPUs: 1, MemoryMiB: 512})
		if err != nil {
			t.Fatal(err)
		}
		if s = f.wait(t, s.ID); s.State != StateStopped {
			t.Fatalf("session %s: %s %q", s.ID, s.State, s.Reason)
		}
		return s.ID
	}
	disk := func(id string) string {
		t.Helper()
		p, err := readSmallFile(f.paths.SessionDir(id).BaseDisk())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := start(), start()
	if disk(a) != disk(b) {
		t.Errorf("two sessions at one commit have two base disks: %s, %s", disk(a), disk(b))
	}
	if fi, err := os.Stat(disk(a)); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("base disk %s: %v, mode %v; want read-only", disk(a), err, fi.Mode())
	}
	git(t, f.repo, "commit", "-q", "--allow-empty", "-m", "second")
	c := start()
	if disk(c) == disk(a) {
		t.Fatal("a session at a new commit reused the old base disk")
	}
	old := disk(a)
	for _, id := range []string{a, b} {
		if err := f.m.Remove(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	// In the trash, they may come back: their base disk stays until the
	// trash is emptied.
	if _, err := os.Stat(old); err != nil {
		t.Errorf("the base disk of sessions in the trash is gone: %v", err)
	}
	if _, err := f.m.EmptyTrash(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(disk(c)); err != nil {
		t.Errorf("the base disk in use is gone: %v", err)
	}
	disks, _ := filepath.Glob(filepath.Join(f.paths.ProjectBases(1), "base-*.ext4"))
	if len(disks) != 1 {
		t.Errorf("base disks left: %q, want only %s", disks, disk(c))
	}
}

// TestLegacySession: a session from before the in-VM workspace (a shared
// clone in sessions/<id>/workspace) is never run, merged or read with git;
// every verb says where its files are, and only rm --force deletes it.
func TestLegacySession(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "true"}, CPUs: 1, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	dir := f.paths.SessionDir(s.ID)
	// What an older Sandbar left: a clone the agent wrote, with a trap.
	os.Remove(dir.BaseDisk())
	ws := dir.LegacyWorkspace()
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	pwned := filepath.Join(t.TempDir(), "pwned")
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\tfsmonitor = touch "+pwned+"\n"), 0o644)
	os.Symlink("/", filepath.Join(ws, "root"))

	for name, verb := range map[string]func() error{
		"restart": func() error { _, err := f.m.Restart(ctx, s.ID); return err },
		"merge":   func() error { _, err := f.m.Merge(ctx, s.ID, MergeOptions{}); return err },
		"changes": func() error { _, err := f.m.Changes(ctx, s.ID); return err },
		"rm":      func() error { return f.m.Remove(ctx, s.ID, false) },
	} {
		err := verb()
		if !errors.Is(err, ErrLegacySession) || !strings.Contains(err.Error(), ws) || !strings.Contains(err.Error(), "rm --force") {
			t.Errorf("%s: err = %v, want ErrLegacySession naming %s", name, err, ws)
		}
	}
	if err := f.m.Remove(ctx, s.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir.Path()); !os.IsNotExist(err) {
		t.Errorf("rm --force left %s: %v", dir, err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("git ran in the old shared clone")
	}
	if _, err := os.Stat("/"); err != nil {
		t.Fatal("the symlink's target went with the session")
	}
}

// TestSourceRefsRefreshBase: the engine watches a project's refs; a new
// commit in the person's repository gets its base disk built before any
// session asks for it.
func TestSourceRefsRefreshBase(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m, err := New(ctx, Config{Paths: f.paths, Store: f.st, Hypervisor: f.hv, Secrets: mapSecrets{},
		Image: f.m.cfg.Image, HostMemory: 16 << 30, HostCPUs: 4, WatchSources: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	p, _, err := m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	waitBase := func(head string) {
		t.Helper()
		f.until(t, "", 30*time.Second, "a base disk for "+head[:12], func(store.Session) bool {
			disks, _ := filepath.Glob(filepath.Join(f.paths.ProjectBases(p.ID), "base-"+head[:12]+"-*.ext4"))
			return len(disks) == 1
		})
	}
	// At once for where the repository is; then for each commit.
	waitBase(git(t, f.repo, "rev-parse", "HEAD"))
	git(t, f.repo, "commit", "-q", "--allow-empty", "-m", "moved on")
	waitBase(git(t, f.repo, "rev-parse", "HEAD"))
	git(t, f.repo, "switch", "-q", "-c", "topic")
	git(t, f.repo, "commit", "-q", "--allow-empty", "-m", "on a new branch")
	waitBase(git(t, f.repo, "rev-parse", "HEAD"))
}

// TestRemoveSessionDirWithReadOnlyExports: a session's folder goes whole,
// its read-only export and a half-written one left by a crash included.
// (Run as root, folder modes stop nothing: the case it guards is a
// person's own uid.)
func TestRemoveSessionDirWithReadOnlyExports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sess [1]")
	for _, d := range []string{"export/sub", ".export-123/sub"} {
		p := filepath.Join(dir, filepath.FromSlash(d))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o444)
		os.Chmod(p, 0o555)
		os.Chmod(filepath.Dir(p), 0o555)
	}
	if err := removeSessionDir(config.NewSessionDir(dir)); err != nil {
		t.Fatalf("removeSessionDir: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
}

// TestUnsavedWorkKept: a VM that dies saves nothing, and its clone on the
// session's disk is then the only copy of the agent's work: rm refuses
// without --force, and changes says what to do.
func TestUnsavedWorkKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo wip > wip.txt; echo started; sleep 600"}}, CPUs: 1, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	f.until(t, s.ID, 30*time.Second, "the agent's start in the log", func(store.Session) bool {
		lines, _ := f.m.Logs(ctx, s.ID, 0, 100)
		return len(lines) > 0 && strings.Contains(lines[len(lines)-1].Text, "started")
	})
	for _, m := range f.hv.Booted() {
		m.Kill()
	}
	if got := f.wait(t, s.ID); got.State != StateFailed {
		t.Fatalf("after the VM died: %s %q", got.State, got.Reason)
	}
	err = f.m.Remove(ctx, s.ID, false)
	if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("rm of a session whose work was never saved: %v", err)
	}
	if _, err := f.m.Changes(ctx, s.ID); !errors.Is(err, ErrNotSaved) {
		t.Errorf("changes: %v, want ErrNotSaved", err)
	}
	if err := f.m.Remove(ctx, s.ID, true); err != nil {
		t.Fatal(err)
	}
}
