//go:build linux

package tests

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/config"
	"sandbar/app/engine"
	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

// uiQueue stands in for fyne.Do: the terminal widget's work is posted
// here and run by the test goroutine, the UI goroutine of this test.
type uiQueue chan func()

// waitFor runs what was posted until cond holds on the UI goroutine, or
// fails the test after d.
func (q uiQueue) waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case f := <-q:
			f()
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after %s: %s did not happen", d, what)
		}
	}
}

// TestEmbeddedTerminal runs a shell in a real session's VM through the
// session window's terminal widget, as the Terminal tab does (the engine's
// Shell, the widget's size as the PTY's): tty names a pseudo-terminal,
// stty size says the widget's size in cells before and after it grows,
// and exit ends it. The widget's screen is what the test reads.
func TestEmbeddedTerminal(t *testing.T) {
	w := newWorld(t)
	w.ok("project", "add", w.repo)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "768", "--no-network")
	w.waitState(id, "running")

	paths, err := config.Resolve(func(k string) string {
		for _, kv := range w.env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	remote, err := engine.Dial(ctx, paths)
	if err != nil {
		t.Fatal(err)
	}

	test.NewTempApp(t)
	q := make(uiQueue, 64)
	view := sbwidget.NewTerminal()
	view.Post = func(f func()) { q <- f }
	win := test.NewTempWindow(t, view)
	win.Resize(fyne.NewSize(900, 500))
	rows, cols := view.GridSize()
	if rows < 10 || cols < 40 {
		t.Fatalf("the terminal is %dx%d in a 900x500 window", rows, cols)
	}

	done := make(chan error, 1)
	go func() {
		done <- view.Run(ctx, func(out io.Writer, rows, cols int) (sbwidget.TerminalConn, func() error, error) {
			sh, err := remote.Shell(ctx, id, session.ExecRequest{PTY: true, Term: "xterm-256color", Rows: rows, Cols: cols}, out, out)
			if err != nil {
				return nil, nil, err
			}
			return sh, func() error {
				res, err := sh.Wait(ctx)
				if err == nil && res.Code != 0 {
					err = fmt.Errorf("the shell exited %d", res.Code)
				}
				return err
			}, nil
		})
	}()
	defer func() {
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", view.Text())
		}
	}()
	typeLine := func(s string) {
		f := view.Focusable()
		for _, r := range s {
			f.TypedRune(r)
		}
		f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	}
	shows := func(re string) bool { return regexp.MustCompile(re).MatchString(view.Text()) }

	q.waitFor(t, 2*time.Minute, "the shell's prompt", func() bool { return shows(`(?m)[$#] *$`) })
	typeLine("tty; stty size; echo end-$((6*7))")
	q.waitFor(t, time.Minute, "tty and stty size to answer", func() bool { return shows(`(?m)^end-42$`) })
	if !shows(`(?m)^/dev/pts/\d+$`) {
		t.Errorf("tty does not name a pseudo-terminal")
	}
	if want := fmt.Sprintf(`(?m)^%d %d$`, rows, cols); !shows(want) {
		t.Errorf("stty size does not say %dx%d", rows, cols)
	}

	win.Resize(fyne.NewSize(1200, 700))
	r2, c2 := view.GridSize()
	if r2 <= rows || c2 <= cols {
		t.Fatalf("the terminal is %dx%d after the window grew, was %dx%d", r2, c2, rows, cols)
	}
	typeLine("clear; stty size")
	q.waitFor(t, time.Minute, fmt.Sprintf("stty size to say %d %d after the resize", r2, c2), func() bool {
		return shows(fmt.Sprintf(`(?m)^%d %d$`, r2, c2))
	})

	typeLine("exit")
	var runErr error
	q.waitFor(t, time.Minute, "the shell's end", func() bool {
		select {
		case runErr = <-done:
			return true
		default:
			return false
		}
	})
	if runErr != nil {
		t.Errorf("the shell ended with %v", runErr)
	}
}
