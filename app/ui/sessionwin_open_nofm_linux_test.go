package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
)

// TestWorkspaceOpenersWithoutXdgOpen: with no xdg-open, Files is still
// offered (it makes the copy and says where it is), saying what to
// install.
func TestWorkspaceOpenersWithoutXdgOpen(t *testing.T) {
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	files := workspaceOpeners("/work/space", func(string) string { return "" }, none)[0]
	if files.label != "Files" || files.missing != "" || len(files.argv) != 0 ||
		!strings.Contains(files.noApp, "xdg-open is not installed") || !strings.Contains(files.noApp, "file manager") {
		t.Errorf("Files without xdg-open: %+v", files)
	}
	withXdg := workspaceOpeners("/work/space", func(string) string { return "" }, func(n string) (string, error) { return "/usr/bin/" + n, nil })[0]
	if strings.Join(withXdg.argv, " ") != "xdg-open /work/space" || withXdg.noApp == "" {
		t.Errorf("Files with xdg-open: %+v", withXdg)
	}
}

// TestSessionWindowFilesWithoutFileManager: xdg-open that finds no file
// manager (it exits 3 at once) no longer makes Files do nothing: the
// window says what to install and where the copy is, and copies its path.
func TestSessionWindowFilesWithoutFileManager(t *testing.T) {
	bin := t.TempDir()
	ran := filepath.Join(bin, "ran")
	script := "#!/bin/sh\necho \"$1\" > " + ran + "\necho 'xdg-open: no method available for opening' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := newSWHarness(t)
	s, _ := h.start(t, `echo hi > made.txt; echo ready; while read l; do :; done`)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the agent to start", func() bool { return logHas(w.logs, "ready") })
	var files *openerButton
	for _, b := range w.openers {
		if b.o.label == "Files" {
			files = b
		}
	}
	if files == nil {
		t.Fatal("no Files button")
	}
	h.q.WaitFor(t, 30*time.Second, "Files enabled", func() bool { return !files.btn.Disabled() })
	test.Tap(files.btn)
	export := h.env.Paths.SessionDir(s.ID).Export()
	h.q.WaitFor(t, 30*time.Second, "the window to say no app opened the folder", func() bool {
		return w.notice.button("Copy path") != nil
	})
	msg := w.notice.text()
	for _, want := range []string{"xdg-open found no app to open the folder with", "install a file manager", export} {
		if !strings.Contains(msg, want) {
			t.Errorf("the notice %q does not say %q", msg, want)
		}
	}
	if b, err := os.ReadFile(ran); err != nil || strings.TrimSpace(string(b)) != export {
		t.Errorf("xdg-open was given %q (%v), want %s", b, err, export)
	}
	test.Tap(w.notice.button("Copy path"))
	if got := h.u.App.Clipboard().Content(); got != export {
		t.Errorf("the clipboard holds %q, want %s", got, export)
	}
}
