package enginelog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFullDiskLinesComeLater: the engine's log file on a real file system
// that fills up (a 1 MiB tmpfs, mounted as root; CI is root; elsewhere it
// skips): the lines logged while it is full reach the file, in order,
// once space is back, and those past the bound are counted in the file.
func TestFullDiskLinesComeLater(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "sandbar-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a small tmpfs (needs root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	f, err := os.OpenFile(filepath.Join(mnt, "engine.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &Writer{W: f, Hold: 4 << 10}
	log := slog.New(slog.NewTextHandler(w, nil))
	log.Warn("before", "n", 0)

	// Fill the disk (the log file's last page keeps some room: the first
	// lines still go there).
	filler := filepath.Join(mnt, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=64k").Run()
	for i := 1; i <= 400; i++ {
		log.Warn("while full", "n", i)
	}
	held, dropped := w.Held()
	if held == 0 || dropped == 0 {
		t.Fatalf("held %d dropped %d; want both (400 lines on a full disk, over a 4 KiB hold)", held, dropped)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	log.Warn("after", "n", 401)
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	// Every line is there in order, but for a gap the count line names
	// exactly.
	want, counted := 0, false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, "log lines lost") {
			if counted || !strings.Contains(line, fmt.Sprintf("lines=%d ", dropped)) {
				t.Fatalf("count line %q; want one, of %d lines", line, dropped)
			}
			counted, want = true, want+dropped
			continue
		}
		var n int
		if _, err := fmt.Sscanf(line[strings.Index(line, " n=")+1:], "n=%d", &n); err != nil || n != want {
			t.Fatalf("line %q: want n=%d next", line, want)
		}
		want++
	}
	if !counted || want != 402 {
		t.Errorf("counted %v, last n %d; want the count and n up to 401", counted, want-1)
	}
	if h, d := w.Held(); h != 0 || d != 0 {
		t.Errorf("after: held %d dropped %d", h, d)
	}
}
