package session

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sandbar/app/store"
)

// TestLogSinkHoldsLinesOnFullDisk: with the database on a real file
// system that fills up (a 4 MiB tmpfs; mounting needs root, CI is root,
// elsewhere it skips), the lines a session logs while the disk is full
// are held and stored, in order, once there is room again.
func TestLogSinkHoldsLinesOnFullDisk(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "sandbar-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a small tmpfs (needs root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	ctx := context.Background()
	st, err := store.Open(filepath.Join(mnt, "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.AddProject(ctx, store.Project{Path: "/repo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, store.Session{ID: "s1", ProjectID: p.ID, State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	l := newLogSink("s1", st, newHub(), slog.New(slog.DiscardHandler), &sync.Mutex{})
	l.line("stdout", "before")
	l.flush()
	filler := filepath.Join(mnt, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run()
	big := strings.Repeat("x", 60<<10)
	n := 1
	for ; n < 64 && !l.heldFull; n++ {
		l.line("stdout", big)
		l.flush()
	}
	if !l.heldFull {
		t.Fatalf("%d lines of 60 KiB on a full 4 MiB disk were all stored", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l.line("stdout", "after")
	l.flush()
	lines, err := st.Logs(ctx, "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != n+1 || lines[0].Text != "before" || lines[len(lines)-1].Text != "after" {
		t.Fatalf("stored %d lines (first %.10q, last %.10q); want all %d, before … after", len(lines), lines[0].Text, lines[len(lines)-1].Text, n+1)
	}
	for i, ln := range lines {
		if ln.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d: out of order or missing", i, ln.Seq)
		}
	}
	if l.heldFull {
		t.Error("still held after the disk had room")
	}
}
