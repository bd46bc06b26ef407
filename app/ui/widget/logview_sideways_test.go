package widget

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
)

// drawn is the text of the rows v's pane draws.
func drawn(v *LogView) []string {
	var out []string
	for i := 0; i < v.pane.rows && i < len(v.pane.r.rows); i++ {
		if t := v.pane.r.rows[i].txt.Text; t != "" {
			out = append(out, t)
		}
	}
	return out
}

// TestLogViewScrollsSideways: a line longer than the row is cut with
// "…"; a sideways scroll, or the Right key, shows the rest of it, up to
// its end and no further, and Left goes back.
func TestLogViewScrollsSideways(t *testing.T) {
	v, q := newTestLogView(t, 100)
	long := "start " + strings.Repeat("0123456789", 40) + " the end"
	v.Append(LogLine{Seq: 1, Stream: "stdout", Time: time.Now(), Text: long})
	q.WaitFor(t, 5*time.Second, "the line", func() bool { return v.Len() == 1 })
	row := drawn(v)[0]
	if !strings.Contains(row, "start 0123") || !strings.HasSuffix(row, "…") || strings.Contains(row, "the end") {
		t.Fatalf("a long line is drawn as %q, want its start cut with …", row)
	}

	// Scrolled sideways past its end: its end shows, nothing beyond.
	v.pane.Scrolled(&fyne.ScrollEvent{Scrolled: fyne.Delta{DX: -100000}})
	row = drawn(v)[0]
	if !strings.HasSuffix(row, "the end") || !strings.Contains(row, "  …") || strings.Contains(row, "start") {
		t.Errorf("scrolled sideways to the end, the line is drawn as %q", row)
	}
	if v.pane.left != v.pane.maxLeft() || v.pane.left == 0 {
		t.Errorf("scrolled %d characters, want to the end (%d)", v.pane.left, v.pane.maxLeft())
	}
	if !v.Following() {
		t.Error("scrolling sideways paused the tail")
	}

	// The keys: Left goes back by a step, Home of the row by many.
	left := v.pane.left
	v.pane.TypedKey(&fyne.KeyEvent{Name: fyne.KeyLeft})
	if v.pane.left != left-sidewaysStep {
		t.Errorf("Left scrolled from %d to %d, want %d", left, v.pane.left, left-sidewaysStep)
	}
	for range 100 {
		v.pane.TypedKey(&fyne.KeyEvent{Name: fyne.KeyLeft})
	}
	if row := drawn(v)[0]; v.pane.left != 0 || !strings.Contains(row, "start 0123") {
		t.Errorf("back at the start, the line is drawn as %q (left %d)", row, v.pane.left)
	}
	v.pane.TypedKey(&fyne.KeyEvent{Name: fyne.KeyRight})
	if row := drawn(v)[0]; v.pane.left != sidewaysStep || !strings.Contains(row, "  …"+long[sidewaysStep:sidewaysStep+10]) {
		t.Errorf("Right: left %d, drawn %q", v.pane.left, row)
	}
}
