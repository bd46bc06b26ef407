package store

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// withUmask runs the rest of the test under umask mask, so a mode the code
// leaves to the umask shows up whatever umask the test was started with.
// Tests that call it must not run in parallel: the umask is the process's.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// wantMode fails the test unless path exists with permission bits want.
func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %#o, want %#o", filepath.Base(path), got, want)
	}
}

// TestOpenMakesTheDataPrivate: a new database, its -wal and -shm files
// and its directory are the person's alone, even under umask 0.
func TestOpenMakesTheDataPrivate(t *testing.T) {
	withUmask(t, 0)
	p := dbPath(t)
	s := openStore(t, p)
	// A write makes sure the WAL and its index exist while the store is open.
	if _, err := s.AddProject(context.Background(), Project{Path: "/r"}); err != nil {
		t.Fatal(err)
	}
	wantMode(t, filepath.Dir(p), 0o700)
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		wantMode(t, f, 0o600)
	}
}

// TestOpenTightensAnOldInstall: an older Sandbar left the data directory
// 0755 and the database 0644, and another process has it open (so -wal
// and -shm exist, 0644 too). Open makes all of them private, and the rows
// are still there.
func TestOpenTightensAnOldInstall(t *testing.T) {
	withUmask(t, 0)
	p := dbPath(t)
	ctx := context.Background()
	other := openStore(t, p)
	if _, err := other.AddProject(ctx, Project{Path: "/r"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t, p)
	wantMode(t, dir, 0o700)
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		wantMode(t, f, 0o600)
	}
	if ps, err := s.Projects(ctx); err != nil || len(ps) != 1 {
		t.Errorf("projects after tightening: %v, %v; want the one added", ps, err)
	}
}
