package ui

import (
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/readable"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// The Log tab's two views of a Claude Code session's log.
const (
	logModeReadable = "Readable"
	logModeRaw      = "Raw stream-json"
)

// logWrapCols is where the readable view wraps its lines: the width of
// a session window at its default size. (A LogView draws one row per
// line; a narrower window scrolls sideways.)
const logWrapCols = 100

// logTab is the session window's Log tab. For Claude Code it holds two
// views of the same log, one shown at a time: what a person reads of it
// (package readable, as `sandbar logs` prints it, wrapped at
// logWrapCols), first, and the raw
// stream-json beside it. Another agent's log is shown as it is.
type logTab struct {
	raw      *sbwidget.LogView
	readable *sbwidget.LogView // nil for another agent
	mode     *widget.RadioGroup
	content  fyne.CanvasObject
	// liveArea shows the running tools' live output (session.EventLive)
	// under the log, hidden while none runs: the tool's result in the
	// log replaces it.
	liveArea *widget.Label
	live     map[int]session.LiveOutput
	// working: the agent's turn runs; ended: a turn ended and no other
	// has begun, so live output that comes late is not shown.
	working, ended bool
}

// newLogTab builds the tab around raw, the window's log view; for
// Claude Code it adds a readable view that works as raw does (posts,
// the full log, the closing keys).
func newLogTab(raw *sbwidget.LogView, claude bool, hint string) *logTab {
	t := &logTab{raw: raw, live: map[int]session.LiveOutput{}}
	t.liveArea = widget.NewLabel("")
	t.liveArea.Wrapping = fyne.TextWrapWord
	t.liveArea.TextStyle.Monospace = true
	t.liveArea.Hide()
	t.content = container.NewBorder(nil, t.liveArea, nil, nil, raw)
	if !claude {
		return t
	}
	r := sbwidget.NewLogView(sbwidget.DefaultLogCapacity, hint)
	r.Post, r.OnOpenOlder = raw.Post, raw.OnOpenOlder
	r.OnClose = func() bool { return closeFrontOf(r) }
	t.readable = r
	t.mode = widget.NewRadioGroup([]string{logModeReadable, logModeRaw}, func(m string) {
		if m == "" {
			// A radio group lets its choice be tapped off: keep one.
			t.mode.SetSelected(logModeReadable)
			return
		}
		t.show(m == logModeReadable)
	})
	t.mode.Horizontal = true
	t.mode.SetSelected(logModeReadable)
	t.content = container.NewBorder(t.mode, t.liveArea, nil, nil, container.NewStack(r, raw))
	t.show(true)
	return t
}

// show shows the readable view, or the raw one.
func (t *logTab) show(readable bool) {
	if t.readable == nil {
		return
	}
	if readable {
		t.raw.Hide()
		t.readable.Show()
	} else {
		t.readable.Hide()
		t.raw.Show()
	}
}

// shown is the view shown.
func (t *logTab) shown() *sbwidget.LogView {
	if t.readable != nil && t.readable.Visible() {
		return t.readable
	}
	return t.raw
}

// append gives both views the lines; any goroutine may call it.
func (t *logTab) append(ls ...store.LogLine) {
	t.raw.Append(logLines(ls...)...)
	if t.readable == nil {
		return
	}
	var out []store.LogLine
	for _, l := range ls {
		for _, r := range readable.Log(l, true) {
			for _, text := range readable.Wrap(r.Text, logWrapCols) {
				r.Text = text
				out = append(out, r)
			}
		}
	}
	t.readable.Append(logLines(out...)...)
}

// setLive shows a running tool's live output, or takes it away when
// the tool ended; on the UI goroutine.
func (t *logTab) setLive(l session.LiveOutput) {
	if t.ended && !l.Done {
		return // the last read of a tool whose turn is over
	}
	if l.Done {
		if l.PID == 0 {
			clear(t.live) // the tool's result: every live view goes
		}
		delete(t.live, l.PID)
	} else {
		t.live[l.PID] = l
	}
	if len(t.live) == 0 {
		t.liveArea.SetText("")
		t.liveArea.Hide()
		return
	}
	pids := make([]int, 0, len(t.live))
	for pid := range t.live {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var lines []string
	for _, pid := range pids {
		lines = append(lines, readable.LiveView(t.live[pid])...)
	}
	t.liveArea.SetText(strings.Join(lines, "\n"))
	t.liveArea.Show()
}

// setWorking follows the agent's turn. When a turn ends its live
// output goes, and stays away until the next turn: the tools' live
// lines stayed under the turn's result, or came back after it with a
// read the poller made before the end.
func (t *logTab) setWorking(working bool) {
	was := t.working
	t.working = working
	switch {
	case working:
		t.ended = false
	case was:
		t.ended = true
		clear(t.live)
		t.liveArea.SetText("")
		t.liveArea.Hide()
	}
}

// setTrimmed says that the stored log's oldest lines were dropped.
func (t *logTab) setTrimmed() {
	t.raw.SetTrimmed()
	if t.readable != nil {
		t.readable.SetTrimmed()
	}
}

func (t *logTab) close() {
	t.raw.Close()
	if t.readable != nil {
		t.readable.Close()
	}
}
