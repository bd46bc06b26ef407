package widget

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/ui/internal/uitest"
)

// newTestLogView shows a LogView of capacity lines in a test window, its
// flushes posted to q.
func newTestLogView(t *testing.T, capacity int) (*LogView, *uitest.Queue) {
	t.Helper()
	a := test.NewTempApp(t)
	q := uitest.NewQueue()
	v := NewLogView(capacity, "see agent.log")
	v.Post = q.Post
	w := a.NewWindow("log")
	w.SetContent(v)
	w.Resize(fyne.NewSize(600, 400))
	t.Cleanup(func() { v.Close(); w.Close() })
	return v, q
}

func logLines(from, n int, stream string) []LogLine {
	out := make([]LogLine, n)
	now := time.Now()
	for i := range out {
		out[i] = LogLine{Seq: int64(from + i), Stream: stream, Time: now, Text: fmt.Sprintf("line %d", from+i)}
	}
	return out
}

// scrollRows scrolls v's pane as a mouse wheel would, by n rows (up
// when n > 0).
func scrollRows(v *LogView, n int) {
	v.pane.Scrolled(&fyne.ScrollEvent{Scrolled: fyne.Delta{DY: float32(n) * v.pane.stride}})
}

func TestLogViewFollowsThenPauses(t *testing.T) {
	v, q := newTestLogView(t, 1000)
	v.Append(logLines(1, 200, "stdout")...)
	q.WaitFor(t, 5*time.Second, "200 lines", func() bool { return v.Len() == 200 })
	if !v.Following() {
		t.Fatal("a new view does not follow the tail")
	}
	rows := v.pane.rows
	if rows < 5 || rows > 30 || v.pane.top != 200-rows {
		t.Fatalf("following 200 lines with %d rows shown, the top row is %d", rows, v.pane.top)
	}
	if got := v.pane.visible(); got[len(got)-1] != "line 200" {
		t.Errorf("the bottom row shows %q", got[len(got)-1])
	}

	// The person scrolls up: new lines no longer move the view.
	scrollRows(v, 50)
	top := v.pane.top
	if v.Following() || top != 150-rows {
		t.Fatalf("after scrolling up 50 rows: following %v, top %d", v.Following(), top)
	}
	v.Append(logLines(201, 50, "stdout")...)
	q.WaitFor(t, 5*time.Second, "250 lines", func() bool { return v.Len() == 250 })
	if v.pane.top != top {
		t.Errorf("paused view moved from row %d to %d", top, v.pane.top)
	}
	if !v.jump.Visible() || !strings.Contains(v.jump.Text, "50 new") {
		t.Errorf("jump button visible %v, %q", v.jump.Visible(), v.jump.Text)
	}

	// Jump to latest follows again.
	test.Tap(v.jump)
	if !v.Following() || v.jump.Visible() || v.pane.top != 250-rows {
		t.Fatalf("Jump to latest: following %v, button %v, top %d", v.Following(), v.jump.Visible(), v.pane.top)
	}
	v.Append(logLines(251, 10, "stdout")...)
	q.WaitFor(t, 5*time.Second, "260 lines", func() bool { return v.Len() == 260 })
	if v.pane.top != 260-rows {
		t.Errorf("following: top %d, want %d", v.pane.top, 260-rows)
	}

	// Scrolling back to the bottom by hand follows again too; so does End.
	scrollRows(v, 3)
	if v.Following() {
		t.Fatal("following after scrolling up")
	}
	scrollRows(v, -3)
	if !v.Following() || v.jump.Visible() {
		t.Error("scrolled back to the bottom but not following")
	}
	v.pane.TypedKey(&fyne.KeyEvent{Name: fyne.KeyPageUp})
	if v.Following() {
		t.Error("following after Page Up")
	}
	v.pane.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEnd})
	if !v.Following() {
		t.Error("End did not follow the tail")
	}
}

func TestLogViewPausedViewStaysPutWhileOldLinesFallOut(t *testing.T) {
	v, q := newTestLogView(t, 300)
	v.Append(logLines(1, 300, "stdout")...)
	q.WaitFor(t, 5*time.Second, "300 lines", func() bool { return v.Len() == 300 })
	v.pane.scrollTo(100, true)
	before := v.pane.visible()
	v.Append(logLines(301, 20, "stdout")...) // 20 fall out above
	q.WaitFor(t, 5*time.Second, "line 320", func() bool { return logHas(v, "line 320") })
	if got := v.pane.visible(); got[0] != before[0] || v.pane.top != 80 {
		t.Errorf("top row %d shows %q, was %q: the rows read should stay in place", v.pane.top, got[0], before[0])
	}
}

func TestLogViewScrollbarAndTaps(t *testing.T) {
	v, q := newTestLogView(t, 1000)
	v.Append(logLines(1, 1000, "stdout")...)
	q.WaitFor(t, 5*time.Second, "1000 lines", func() bool { return v.Len() == 1000 })
	bar := v.pane.bar()
	y, h := bar.thumb()
	if h <= 0 || y+h < bar.Size().Height-1 {
		t.Fatalf("following, the thumb is at %v+%v of %v", y, h, bar.Size().Height)
	}
	bar.Dragged(&fyne.DragEvent{Dragged: fyne.Delta{DY: -(bar.Size().Height - h)}})
	if v.pane.top != 0 || v.Following() {
		t.Errorf("dragging the thumb to the top: top row %d, following %v", v.pane.top, v.Following())
	}
	test.TapAt(bar, fyne.NewPos(2, bar.Size().Height-2)) // below the thumb: a page down
	if v.pane.top != v.pane.rows-1 {
		t.Errorf("a tap below the thumb moved to row %d", v.pane.top)
	}
	// A tap on the third row selects its line.
	test.TapAt(v.pane, fyne.NewPos(20, 2.5*v.pane.stride))
	if v.selected != v.ring.first+int64(v.pane.top)+2 {
		t.Errorf("tapped the third row, selected line %d", v.selected)
	}
}

func TestLogViewRingIsBounded(t *testing.T) {
	const capacity = 1000
	v, q := newTestLogView(t, capacity)
	for i := 0; i < 50; i++ {
		v.Append(logLines(i*1000+1, 1000, "stdout")...)
	}
	q.WaitFor(t, 10*time.Second, "the last of 50,000 lines", func() bool { return logHas(v, "line 50000") })
	if v.Len() != capacity || len(v.ring.buf) != capacity || cap(v.ring.buf) > 2*capacity {
		t.Errorf("ring holds %d lines in a buffer of %d (cap %d), bound %d", v.Len(), len(v.ring.buf), cap(v.ring.buf), capacity)
	}
	if first := v.Lines()[0]; first != "line 49001" {
		t.Errorf("oldest line held %q, want line 49001", first)
	}
	if !v.note.Visible() || !strings.Contains(v.note.Text, "49,000 older lines") || !strings.Contains(v.note.Text, "agent.log") {
		t.Errorf("older-lines note %v %q", v.note.Visible(), v.note.Text)
	}

	// A UI goroutine that falls behind does not let pending lines pile up.
	for i := 0; i < 20; i++ {
		v.Append(logLines(50001+i*1000, 1000, "stdout")...)
	}
	v.mu.Lock()
	pending := len(v.pending)
	v.mu.Unlock()
	if pending > 2*capacity {
		t.Errorf("%d lines pending for a view of %d", pending, capacity)
	}
	q.WaitFor(t, 10*time.Second, "line 70000", func() bool { return logHas(v, "line 70000") })
}

func TestLogViewBatchesRefreshes(t *testing.T) {
	v, q := newTestLogView(t, 5000)
	flushes := 0
	v.onFlush = func(int) { flushes++ }
	for i := 1; i <= 1000; i++ {
		v.Append(logLines(i, 1, "stdout")...)
	}
	q.WaitFor(t, 5*time.Second, "1000 lines", func() bool { return v.Len() == 1000 })
	if flushes > 3 || v.refreshes != flushes {
		t.Errorf("1000 appends in a burst took %d flushes and %d refreshes, want a few", flushes, v.refreshes)
	}

	// Lines arriving steadily for half a second refresh at most 30 times
	// a second.
	before := v.refreshes
	start := time.Now()
	pace := time.NewTicker(time.Millisecond) // a line a millisecond
	defer pace.Stop()
	for time.Since(start) < 500*time.Millisecond {
		v.Append(logLines(2000, 1, "stdout")...)
		q.Drain()
		<-pace.C
	}
	q.WaitFor(t, time.Second, "the last flush", func() bool { return logIdle(v) })
	rate := float64(v.refreshes-before) / time.Since(start).Seconds()
	if rate > 32 {
		t.Errorf("%.1f refreshes a second under a steady stream, want ≤ 30", rate)
	}
}

func TestLogViewSearch(t *testing.T) {
	v, q := newTestLogView(t, 1000)
	ls := logLines(1, 500, "stdout")
	ls[120].Text = "ERROR: disk full"
	ls[121].Stream = "stderr"
	ls[121].Text = "error: retrying"
	ls[400].Text = "an Error again"
	v.Append(ls...)
	q.WaitFor(t, 5*time.Second, "500 lines", func() bool { return v.Len() == 500 })

	test.Type(v.search, "error")
	if v.counter.Text != "3 matches" {
		t.Errorf("counter %q", v.counter.Text)
	}
	pressEnter(v.search) // Enter: the first match
	if v.CurrentMatch() != "ERROR: disk full" || v.counter.Text != "1 of 3" {
		t.Errorf("first match %q, counter %q", v.CurrentMatch(), v.counter.Text)
	}
	if v.Following() {
		t.Error("moving to a match should pause following")
	}
	v.NextMatch()
	v.NextMatch()
	if v.CurrentMatch() != "an Error again" {
		t.Errorf("third match %q", v.CurrentMatch())
	}
	v.NextMatch() // wraps
	if v.CurrentMatch() != "ERROR: disk full" {
		t.Errorf("after wrapping %q", v.CurrentMatch())
	}
	v.PrevMatch()
	if v.CurrentMatch() != "an Error again" {
		t.Errorf("previous of the first %q", v.CurrentMatch())
	}

	// Filtering shows the matching lines only, new ones included.
	test.Tap(v.only)
	if got := v.Lines(); len(got) != 3 {
		t.Fatalf("filtered view %q", got)
	}
	more := logLines(501, 1, "stdout")
	more[0].Text = "late error"
	v.Append(more...)
	q.WaitFor(t, 5*time.Second, "the new match", func() bool { return len(v.Lines()) == 4 })

	// Copy gives the rows shown; a selected line alone.
	v.Copy()
	if got := fyneClipboard(); got != "ERROR: disk full\nerror: retrying\nan Error again\nlate error" {
		t.Errorf("copied %q", got)
	}
	test.Tap(v.only)
	v.selectLine(v.ring.first + 7)
	v.Copy()
	if got := fyneClipboard(); got != "line 8" {
		t.Errorf("copied the selection as %q", got)
	}

	test.Type(v.search, "zzz-no-such") // appends to "error"
	if v.counter.Text != "no match" {
		t.Errorf("counter %q", v.counter.Text)
	}
}

func TestLogViewDisplay(t *testing.T) {
	l := &logLine{at: time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local).UnixNano(), text: "\x1b[1;31mred\x1b[0m\tdone\r"}
	if got := logDisplayText(l, 80, 0); got != "15:04:05  red    done" {
		t.Errorf("display %q", got)
	}
	l.text = strings.Repeat("é", 100)
	if got := logDisplayText(l, 30, 0); got != "15:04:05  "+strings.Repeat("é", 19)+"…" {
		t.Errorf("a line cut at 30 columns shows as %q", got)
	}
	l.text = strings.Repeat("x", 1<<20)
	if got := logDisplayText(l, 30, 0); len(got) != 10+19+len("…") {
		t.Errorf("a 1 MiB line cut at 30 columns shows as %d bytes", len(got))
	}
	for _, c := range []struct{ s, q string }{{"Hello World", "o w"}, {"ÉTÉ chaud", "été"}} {
		if !containsFold(c.s, c.q) {
			t.Errorf("containsFold(%q, %q) false", c.s, c.q)
		}
	}
	if containsFold("abc", "abd") {
		t.Error("containsFold(abc, abd)")
	}
	if got := formatCount(1234567); got != "1,234,567" {
		t.Errorf("formatCount %q", got)
	}
}

func TestLogViewMemoryStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds 200k lines")
	}
	v, q := newTestLogView(t, DefaultLogCapacity)
	feed := func(from, n int) {
		for i := from; i < from+n; i += 1000 {
			v.Append(logLines(i, 1000, "stdout")...)
			q.Drain()
		}
		q.WaitFor(t, 10*time.Second, "the fed lines", func() bool { return logIdle(v) })
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	feed(1, DefaultLogCapacity)
	full := heap()
	feed(DefaultLogCapacity+1, 180000)
	after := heap()
	if v.Len() != DefaultLogCapacity {
		t.Errorf("holds %d lines", v.Len())
	}
	if after > full+full/2+8<<20 {
		t.Errorf("heap grew from %d MiB with a full ring to %d MiB after 180k more lines", full>>20, after>>20)
	}
}

func fyneClipboard() string { return fyne.CurrentApp().Clipboard().Content() }

// logIdle reports whether v has no flush to come.
func logIdle(v *LogView) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.scheduled
}

// TestLogViewOpensTheFullLog: with somewhere to open the whole log, the
// note about older lines comes with a button for it instead of a path.
func TestLogViewOpensTheFullLog(t *testing.T) {
	v, q := newTestLogView(t, 100)
	opened := 0
	v.OnOpenOlder = func() { opened++ }
	v.Append(logLines(1, 50, "stdout")...)
	q.WaitFor(t, 10*time.Second, "line 50", func() bool { return logHas(v, "line 50") })
	if v.note.Visible() || v.openOld.Visible() {
		t.Fatalf("no line is older than the view, yet the note (%v) or the button (%v) shows", v.note.Visible(), v.openOld.Visible())
	}
	v.Append(logLines(51, 100, "stdout")...)
	q.WaitFor(t, 10*time.Second, "line 150", func() bool { return logHas(v, "line 150") })
	if !v.note.Visible() || !strings.Contains(v.note.Text, "50 older lines") || strings.Contains(v.note.Text, "agent.log") {
		t.Errorf("older-lines note %v %q: want the count and no path", v.note.Visible(), v.note.Text)
	}
	if !v.openOld.Visible() {
		t.Fatal("no button to open the full log")
	}
	test.Tap(v.openOld)
	if opened != 1 {
		t.Errorf("the button opened the log %d times, want 1", opened)
	}
	v.Clear()
	q.WaitFor(t, 10*time.Second, "the cleared view", func() bool { return v.Len() == 0 })
	if v.openOld.Visible() {
		t.Error("the button stays after Clear")
	}
}

// TestLogViewHeldReadsBackWhatWasAppended: the lines held come back with
// their streams, oldest first.
func TestLogViewHeldReadsBackWhatWasAppended(t *testing.T) {
	v, q := newTestLogView(t, 3)
	v.Append(LogLine{Seq: 1, Stream: "stdout", Text: "one"}, LogLine{Seq: 2, Stream: "stderr", Text: "two"},
		LogLine{Seq: 3, Stream: "exec", Text: "three"}, LogLine{Seq: 4, Stream: "chat", Text: "four"})
	q.WaitFor(t, 5*time.Second, "four lines appended", func() bool { return logHas(v, "four") })
	var got []string
	for _, l := range v.Held() {
		got = append(got, fmt.Sprintf("%d %s %s", l.Seq, l.Stream, l.Text))
	}
	if want := "2 stderr two|3 exec three|4 chat four"; strings.Join(got, "|") != want {
		t.Errorf("held %q, want %q", strings.Join(got, "|"), want)
	}
}
