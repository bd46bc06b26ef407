package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
)

// TestSessionWindowOpenPortWithoutBrowser: Open on a published port with
// no browser to hand it to (xdg-open exits 3 at once), or no xdg-open at
// all, no longer does nothing: the window says so and offers Copy URL,
// which puts the address on the clipboard.
func TestSessionWindowOpenPortWithoutBrowser(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.openNetwork(t, s.ID)
	w.net.look = func(name string) (string, error) {
		if name == "xdg-open" {
			return filepath.Join(bin, name), nil
		}
		return "", exec.ErrNotFound
	}
	p, err := h.env.Manager.PublishPort(ctx, s.ID, 5173, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 5*time.Second, "the published port listed", func() bool { return len(w.net.ports) == 1 })
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	test.Tap(buttonIn(t, w.net.portList, "Open"))
	h.q.WaitFor(t, 10*time.Second, "the window to say no browser opened the address", func() bool {
		return w.notice.button("Copy URL") != nil
	})
	if msg := w.notice.text(); !strings.Contains(msg, "found no browser") || !strings.Contains(msg, p.URL) {
		t.Errorf("the notice says %q, want that no browser opened %s", msg, p.URL)
	}
	test.Tap(w.notice.button("Copy URL"))
	if got := h.u.App.Clipboard().Content(); got != p.URL {
		t.Errorf("the clipboard holds %q, want %s", got, p.URL)
	}

	// No xdg-open at all: the same offer, at once.
	w.net.look = func(string) (string, error) { return "", exec.ErrNotFound }
	h.u.App.Clipboard().SetContent("")
	test.Tap(buttonIn(t, w.net.portList, "Open"))
	if w.notice.button("Copy URL") == nil || !strings.Contains(w.notice.text(), "xdg-open is not installed") {
		t.Fatalf("without xdg-open the notice says %q, with no Copy URL", w.notice.text())
	}
	test.Tap(w.notice.button("Copy URL"))
	if got := h.u.App.Clipboard().Content(); got != p.URL {
		t.Errorf("the clipboard holds %q, want %s", got, p.URL)
	}
}
