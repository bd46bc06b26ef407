package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// dbPath is a database path in a fresh temp dir, in a folder whose name
// has spaces, non-ASCII letters and characters that mean something in a
// URI, as a person's home folder may.
func dbPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "Données de Zoë ü #1?x=y&z%20", "sandbar.db")
}

// openStore opens p and closes it when the test ends.
func openStore(t testing.TB, p string) *Store {
	t.Helper()
	s, err := Open(p)
	if err != nil {
		t.Fatalf("Open(%q): %v", p, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// seed records a project and a fully populated session.
func seed(t testing.TB, s *Store) (Project, Session) {
	t.Helper()
	ctx := context.Background()
	p, err := s.AddProject(ctx, Project{Name: "my repo", Path: "/home/zoë/my repo", DefaultBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	x := Session{
		ID: "abcdef1234", ProjectID: p.ID, Title: "Fix the tests ✓", Branch: "sandbar/abcdef1234", Base: "main", Prompt: "fix the tests ✓",
		Agent:  Agent{Command: "claude", Args: []string{"-p", "--verbose"}, Kind: "claude"},
		Limits: Limits{CPUs: 2, MemoryMiB: 2048, DiskGiB: 8, Network: true, Timeout: time.Hour, IdleTimeout: 10 * time.Minute},
		State:  "running", Reason: "started by hand", Activity: "working", ExitCode: &code, Error: "",
		Owner:   Owner{PID: 4242, Start: 987654, Host: "zoë-mac", Socket: "/tmp/sandbar sock"},
		Timings: map[string]time.Duration{"clone": 50 * time.Millisecond, "boot": 1500 * time.Millisecond},
		Started: time.Unix(1700000000, 123456789),
	}
	if err := s.CreateSession(ctx, x); err != nil {
		t.Fatal(err)
	}
	return p, x
}

// fileState is what a refused file must keep: its bytes, its modification
// time and the names beside it (no -wal or -shm left behind).
type fileState struct {
	data    []byte
	mtime   time.Time
	entries []string
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return fileState{data, fi.ModTime(), names}
}

// writeOld writes data at p with an old modification time, so that any
// write by Open would show.
func writeOld(t *testing.T, p string, data []byte) fileState {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return stateOf(t, p)
}

func (a fileState) equal(b fileState) bool {
	return string(a.data) == string(b.data) && a.mtime.Equal(b.mtime) && slices.Equal(a.entries, b.entries)
}
