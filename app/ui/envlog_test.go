package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/ui/internal/uitest"
	sbwidget "sandbar/app/ui/widget"
)

// TestFollowLogBounds: a preparation's log is hostile text of any size.
// One of 3 MB is read from its last MiB on, saying so; a FIFO put in its
// place is refused without hanging; a symlink is not followed.
func TestFollowLogBounds(t *testing.T) {
	dir := t.TempDir()
	q := uitest.NewQueue()
	follow := func(path string) *sbwidget.LogView {
		v := sbwidget.NewLogView(envLogLines, "")
		v.Post = q.Post
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); followLog(ctx, path, v) }()
		t.Cleanup(func() { cancel(); <-done; v.Close() })
		return v
	}

	big := filepath.Join(dir, "big.log")
	line := strings.Repeat("z", 999) + "\n"
	if err := os.WriteFile(big, []byte("first line\n"+strings.Repeat(line, 3000)+"last line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := follow(big)
	q.WaitFor(t, 5*time.Second, "the big log's tail", func() bool {
		l := v.Lines()
		return len(l) > 0 && l[len(l)-1] == "last line"
	})
	l := v.Lines()
	if !strings.HasPrefix(l[0], "The log's first ") || len(l) > envLogStart/1000+3 || logHas(v, "first line") {
		t.Errorf("a 3 MB log: %d lines shown, the first %q", len(l), l[0])
	}

	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fv := follow(fifo)
	q.WaitFor(t, 5*time.Second, "the FIFO refused", func() bool { return logHas(fv, "is not a file") })

	link := filepath.Join(dir, "link.log")
	os.Symlink(big, link)
	lv := follow(link)
	q.WaitFor(t, 5*time.Second, "the symlink refused", func() bool { return logHas(lv, "Cannot read the log") })
}
