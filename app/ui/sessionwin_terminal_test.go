package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// typeLine types s and Enter into the Terminal tab's widget, as the
// keyboard does.
func typeLine(p *terminalPanel, s string) {
	f := p.view.Focusable()
	for _, r := range s {
		f.TypedRune(r)
	}
	f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

// showsSize reports whether a line of the terminal is its size in cells,
// as stty size prints it.
func showsSize(p *terminalPanel) bool {
	rows, cols := p.view.GridSize()
	return regexp.MustCompile(fmt.Sprintf(`(?m)^%d %d$`, rows, cols)).MatchString(p.view.Text())
}

// hasPrompt reports whether the terminal shows a shell's prompt.
func hasPrompt(p *terminalPanel) bool {
	return regexp.MustCompile(`(?m)[$#] *$`).MatchString(p.view.Text())
}

// TestSessionWindowTerminalTab: the Terminal tab opens a shell in the
// session's VM on a pseudo-terminal of the widget's size, with no
// terminal app; the shell's size follows the window's; what the shell
// prints to steer the host (a title, the clipboard, the working
// directory) does nothing; exit ends it and New shell opens another.
func TestSessionWindowTerminalTab(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "echo ready; sleep 600")
	w := h.open(t, s.ID)
	p := w.term
	h.q.WaitFor(t, 30*time.Second, "the session running", func() bool { return p.live })
	if !p.newBtn.Disabled() && p.busy {
		t.Fatal("New shell is enabled while a shell runs")
	}
	for i, it := range w.tabs.Items {
		if it.Text == tabTerminal {
			w.tabs.SelectIndex(i)
		}
	}
	// A person types once the prompt shows.
	h.q.WaitFor(t, 30*time.Second, "a shell's prompt when the tab is shown", func() bool { return p.busy && hasPrompt(p) })
	if focused := w.win.Canvas().Focused(); focused != p.view.Focusable() {
		t.Errorf("the terminal does not have the keyboard: %v is focused", focused)
	}
	h.q.Drain() // the layout settles
	rows, cols := p.view.GridSize()
	if rows < 10 || cols < 40 {
		t.Fatalf("the terminal is %dx%d in a 1000x700 window", rows, cols)
	}

	typeLine(p, "tty; stty size; echo done-$((40+2))")
	defer func() {
		if t.Failed() {
			t.Logf("the terminal shows:\n%s", p.view.Text())
		}
	}()
	h.q.WaitFor(t, 30*time.Second, "tty and stty size to answer the widget's size", func() bool {
		return strings.Contains(p.view.Text(), "done-42") && showsSize(p)
	})
	if !regexp.MustCompile(`(?m)^/dev/pts/\d+$`).MatchString(p.view.Text()) {
		t.Errorf("tty does not name a pseudo-terminal:\n%s", p.view.Text())
	}

	// The window grows: the shell's terminal grows with it.
	w.win.Resize(fyne.NewSize(1200, 800))
	r2, c2 := p.view.GridSize()
	if r2 <= rows || c2 <= cols {
		t.Fatalf("the terminal is %dx%d after the window grew, was %dx%d", r2, c2, rows, cols)
	}
	typeLine(p, "clear; stty size")
	want := fmt.Sprintf("%d %d", r2, c2)
	h.q.WaitFor(t, 30*time.Second, "stty size to answer "+want+" after the resize", func() bool { return showsSize(p) })

	// The guest's bytes try to steer the host.
	title := w.win.Title()
	clip := h.u.App.Clipboard()
	clip.SetContent("mine")
	typeLine(p, `clear; printf '\033]0;Owned\007\033]2;Owned\033\\\033]52;c;b3duZWQ=\007\033]7;file:///etc\007\033]8;;file:///etc/passwd\007link\033]8;;\007 end-%s\n' 7`)
	h.q.WaitFor(t, 30*time.Second, "the hostile line drawn", func() bool { return strings.Contains(p.view.Text(), "link end-7") })
	if w.win.Title() != title {
		t.Errorf("the guest set the window's title: %q", w.win.Title())
	}
	if got := clip.Content(); got != "mine" {
		t.Errorf("the guest wrote the clipboard: %q", got)
	}

	typeLine(p, "exit 3")
	h.q.WaitFor(t, 30*time.Second, "the shell's end said", func() bool { return !p.busy })
	if !strings.Contains(p.note.Text, "exit code 3") || p.newBtn.Disabled() {
		t.Errorf("after exit 3: note %q, New shell disabled %v", p.note.Text, p.newBtn.Disabled())
	}
	test.Tap(p.newBtn)
	h.q.WaitFor(t, 30*time.Second, "a new shell's prompt", func() bool { return p.busy && strings.Count(p.view.Text(), "vmtest-workspace") > 1 })
	typeLine(p, "echo again-$((1+1))")
	h.q.WaitFor(t, 30*time.Second, "the new shell to answer", func() bool { return strings.Contains(p.view.Text(), "again-2") })
}
