package session

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSessionDiskUsage(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "aaaa")
	os.MkdirAll(filepath.Join(a, "workspace"), 0o755)
	// A sparse 1 GiB scratch disk with 64 KiB written.
	f, err := os.Create(filepath.Join(a, "scratch.img"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.WriteAt(make([]byte, 64<<10), 1<<20)
	f.Close()
	// A hard link shared with the repository frees nothing.
	shared := filepath.Join(dir, "repo-object")
	os.WriteFile(shared, make([]byte, 1<<20), 0o644)
	os.Link(shared, filepath.Join(a, "workspace", "object"))
	os.MkdirAll(filepath.Join(dir, "bbbb"), 0o755)
	os.WriteFile(filepath.Join(dir, "stray-file"), []byte("x"), 0o644)

	got, err := sessionDiskUsage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(a, "scratch.img"), &st)
	if len(got) != 2 || got["aaaa"] < 64<<10 || got["aaaa"] > 1<<20 {
		t.Errorf("usage = %v (scratch takes %d bytes), want aaaa about 64 KiB plus folders, and bbbb", got, st.Blocks*512)
	}
	if none, err := sessionDiskUsage(context.Background(), filepath.Join(dir, "none")); err != nil || len(none) != 0 {
		t.Errorf("no sessions folder: %v, %v", none, err)
	}
}
