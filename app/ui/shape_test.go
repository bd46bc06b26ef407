package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	sbwidget "sandbar/app/ui/widget"
)

// screen is the size the shape tests run windows at: a 13-inch laptop.
var screen = fyne.NewSize(1280, 800)

// holdsShape fails the test unless win is still size and nothing in it
// asks for more: the window's content (inside the frame that guards it)
// fits, and each of buttons lies inside the window. A content whose
// minimum size exceeds the window is what makes Fyne's desktop driver
// grow the window on its next frame, so that is what is checked; the
// test driver itself never grows a window once it has a size.
func holdsShape(t *testing.T, win fyne.Window, size fyne.Size, buttons ...*widget.Button) {
	t.Helper()
	if got := win.Canvas().Size(); got != size {
		t.Errorf("the window is %v, want %v", got, size)
	}
	inner := framedContent(win)
	if ms := inner.MinSize(); ms.Width > size.Width || ms.Height > size.Height {
		t.Errorf("the window's content asks for %v in a %v window; what asks for most:\n%s", ms, size, widest(inner, size))
	}
	d := fyne.CurrentApp().Driver()
	for _, b := range buttons {
		p, s := d.AbsolutePositionForObject(b), b.Size()
		if !b.Visible() || s.IsZero() || p.X < 0 || p.Y < 0 || p.X+s.Width > size.Width || p.Y+s.Height > size.Height {
			t.Errorf("button %q is at %v, %v: not inside the %v window", b.Text, p, s, size)
		}
	}
}

// widest names the objects in o whose minimum size exceeds size, to say
// which pane broke the shape.
func widest(o fyne.CanvasObject, size fyne.Size) string {
	var b strings.Builder
	for _, x := range test.LaidOutObjects(o) {
		if _, ok := x.(*canvas.Text); ok || !x.Visible() {
			continue
		}
		if ms := x.MinSize(); ms.Width > size.Width || ms.Height > size.Height {
			b.WriteString("  ")
			b.WriteString(strings.TrimPrefix(strings.TrimPrefix(fmt.Sprintf("%T", x), "*"), "widget."))
			b.WriteString(" ")
			fmt.Fprintf(&b, "%v", ms)
			if l, ok := x.(*widget.Label); ok {
				b.WriteString(" " + sbwidget.ClipRunes(l.Text, 40))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestSessionWindowHoldsItsShape opens a session window at 1280×800 and
// gives every pane more than fits: a 5,000-line diff holding a
// 10,000-character line, log lines and transcript entries as long, a
// state and a notice as long. The window keeps its size, nothing in it
// asks for more, and Stop, Restart, Merge and Delete stay inside it.
func TestSessionWindowHoldsItsShape(t *testing.T) {
	h := newSWHarness(t)
	long := strings.Repeat("x", 10000)
	// A new file of 4,991 lines, the first 10,000 characters long: a
	// diff of 4,997 lines with its header.
	s, _ := h.start(t, `head -c 10000 /dev/zero | tr '\0' x > big.txt; echo >> big.txt
awk 'BEGIN { for (i = 0; i < 4990; i++) print "line " i }' >> big.txt
echo ready; while read l; do :; done`)
	w := h.open(t, s.ID)
	w.win.Resize(screen)
	buttons := []*widget.Button{w.stop, w.restart, w.merge, w.del}
	holdsShape(t, w.win, screen, buttons...)

	w.tabs.SelectIndex(2)
	h.q.WaitFor(t, 30*time.Second, "big.txt in the Changes tab", func() bool { return len(w.changes.files) == 1 })
	w.changes.list.Select(0)
	h.q.WaitFor(t, 30*time.Second, "big.txt's diff", func() bool { return strings.Contains(w.changes.diffText(), "+line 4989") })
	if !strings.Contains(w.changes.diffText(), "+xxxxxxxxxx") {
		t.Error("the diff does not show the long line")
	}
	holdsShape(t, w.win, screen, buttons...)

	// The other panes, each given a line as long.
	w.logs.Append(sbwidget.LogLine{Seq: 1, Stream: "stdout", Time: time.Now(), Text: long})
	w.transcript.Add(sbwidget.Entry{Kind: sbwidget.EntrySystem, Time: time.Now(), Text: long})
	w.transcript.Add(sbwidget.Entry{Kind: sbwidget.EntryText, Time: time.Now(), Text: "```\n" + long + "\n```\n" + long})
	w.transcript.Add(sbwidget.Entry{Kind: sbwidget.EntryToolUse, Time: time.Now(), Tool: "Bash", ToolID: "t1", Input: `{"command":"` + long + `"}`})
	w.transcript.Add(sbwidget.Entry{Kind: sbwidget.EntryToolResult, Time: time.Now(), ToolID: "t1", Text: long})
	w.transcript.Add(sbwidget.Entry{Kind: sbwidget.EntryUser, Time: time.Now(), Text: long})
	w.notice.show(widget.DangerImportance, "Could not merge: "+long)
	w.sess.Reason = long
	w.applySession(w.sess)
	for i, tab := range w.tabs.Items {
		w.tabs.SelectIndex(i)
		h.q.Drain()
		holdsShape(t, w.win, screen, buttons...)
		// Each pane is sbwidget.Fit's, which guards the window; the pane
		// itself must hold its content too (wrap, truncate or scroll),
		// or what it shows would be clipped.
		pane := tab.Content.(*fyne.Container).Objects[0]
		if ms := pane.MinSize(); ms.Width > screen.Width || ms.Height > screen.Height {
			t.Errorf("the %s pane asks for %v:\n%s", tab.Text, ms, widest(pane, screen))
		}
	}
}
