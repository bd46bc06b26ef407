package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskFullSaysSo: on a file system with no room left (a 4 MiB tmpfs,
// filled), a write the database cannot make fails with ErrDiskFull and
// says "disk full" and what to do, and does not hang; opening the file
// again once the WAL is gone, with no room for SQLite's shared memory,
// says the same. Mounting needs root (CI is root); elsewhere it skips.
func TestDiskFullSaysSo(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "sandbar-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a small tmpfs (needs root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	path := filepath.Join(mnt, "sandbar.db")
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s)
	if err := s.Close(); err != nil { // folds the WAL into the file
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, mnt)
	big := strings.Repeat("x", 1<<20)
	for i := 0; err == nil || !errors.Is(err, ErrDiskFull); i++ {
		if i == 64 {
			t.Fatalf("64 writes of 1 MiB on a full 4 MiB disk, and the last said %v", err)
		}
		err = s.SetSetting(ctx, SettingKey("filler"+string(rune('a'+i%26))+strings.Repeat("y", i)), big)
	}
	if !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("a write on a full disk says %q", err)
	}
	s.Close()
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	fill(t, mnt)
	s, err = Open(path)
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Open on a full disk with no WAL: %v, want ErrDiskFull", err)
	}
}

// fill writes to a ballast file in dir until the disk is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "ballast"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for buf := make([]byte, 4<<10); err == nil; {
		_, err = f.Write(buf)
	}
}
