package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

// TestSessionWindowLogReadable: a Claude Code session's Log tab shows
// what a person reads of a real capture of its stream-json (app/readable
// /testdata/tools.jsonl): the text, one line per tool call, the results
// folded, the turn's end; the toggle shows the raw stream beside it, and
// back. A custom agent's Log tab has no toggle.
func TestSessionWindowLogReadable(t *testing.T) {
	h := newSWHarness(t)
	capture, err := filepath.Abs(filepath.Join("..", "readable", "testdata", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for d := bin; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the agent may run as another user
	}
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bin, "lines"), b, 0o644)
	// A stand-in for Claude Code: the capture, once per message.
	script := "#!/bin/sh\nwhile read msg; do cat " + filepath.Join(bin, "lines") + "; done\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env.Secrets["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
	repo := h.env.Repo(t, "readable")
	h.env.Give(t, repo, "PATH")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Prompt: "Count and note."})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	w.tabs.SelectIndex(1)
	lt := w.logTab
	if lt.readable == nil || lt.mode == nil || lt.mode.Selected != logModeReadable || lt.shown() != lt.readable || lt.raw.Visible() {
		t.Fatal("a Claude Code session's Log tab does not open on its readable view")
	}
	h.q.WaitFor(t, 30*time.Second, "the turn's end in the readable log", func() bool { return logHas(lt.readable, "✓ Turn done in 18.6 s · $0.3075") })
	lines := lt.readable.Lines()
	for _, want := range []string{"· agent started (model claude-opus-5-5)", "I'll count to twelve first.", "▸ Bash: seq 1 12", "  … 8 more lines",
		"▸ Write: notes.txt", "▸ Read: notes.txt", "▸ Bash: ls /nonexistent", "  ✗ Exit code 2", "Count and note."} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasSuffix(l, want) }) {
			t.Errorf("the readable log has no line %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	for _, l := range lines {
		if strings.Contains(l, `"session_id"`) {
			t.Errorf("the readable log shows stream-json: %s", l)
		}
		if n := len([]rune(l)); n > logWrapCols {
			t.Errorf("a readable line of %d characters is not wrapped: %q", n, l)
		}
	}
	// The Write's result (118 characters) wraps, indented as a result.
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "  ") && strings.HasSuffix(l, "Read it back)") && !strings.Contains(l, "File created")
	}) {
		t.Errorf("the Write's long result is not wrapped:\n%s", strings.Join(lines, "\n"))
	}
	if !logHas(lt.raw, `"session_id"`) {
		t.Errorf("the raw log has no stream-json:\n%s", strings.Join(lt.raw.Lines(), "\n"))
	}

	lt.mode.SetSelected(logModeRaw) // what a tap on it does
	if lt.shown() != lt.raw || lt.readable.Visible() {
		t.Error("choosing Raw stream-json does not show the raw log")
	}
	lt.mode.SetSelected("")
	if lt.mode.Selected != logModeReadable || lt.shown() != lt.readable {
		t.Errorf("with no choice the tab shows %q, want the readable log", lt.mode.Selected)
	}

	c, _ := h.start(t, echoAgent)
	cw := h.open(t, c.ID)
	if cw.logTab.readable != nil || cw.logTab.mode != nil {
		t.Error("a custom agent's Log tab offers a readable view")
	}
}

// TestLogLiveGoesWhenTheTurnEnds: the live area under the log shows a
// running tool's lines while the turn runs; when the turn ends they go,
// and a late read of the same tool does not bring them back under the
// turn's result; the next turn shows its own.
func TestLogLiveGoesWhenTheTurnEnds(t *testing.T) {
	test.NewTempApp(t)
	tab := newLogTab(sbwidget.NewLogView(100, ""), true, "")
	tab.setWorking(true)
	tab.setLive(session.LiveOutput{PID: 7, Tool: "Bash", Lines: []string{"tick 1"}})
	if !tab.liveArea.Visible() || !strings.Contains(tab.liveArea.Text, "tick 1") {
		t.Fatalf("a running tool's lines are not shown: %q", tab.liveArea.Text)
	}
	tab.setWorking(false)
	if tab.liveArea.Visible() {
		t.Fatalf("the live lines stay after the turn ended: %q", tab.liveArea.Text)
	}
	tab.setLive(session.LiveOutput{PID: 7, Tool: "Bash", Lines: []string{"tick 1", "tick 2"}})
	if tab.liveArea.Visible() {
		t.Fatalf("a late read brought the live lines back under the result: %q", tab.liveArea.Text)
	}
	tab.setWorking(true)
	tab.setLive(session.LiveOutput{PID: 9, Tool: "Bash", Lines: []string{"next turn"}})
	if !tab.liveArea.Visible() || strings.Contains(tab.liveArea.Text, "tick") {
		t.Fatalf("the next turn's live lines: visible %v, %q", tab.liveArea.Visible(), tab.liveArea.Text)
	}
}
