package widget

import (
	"image/color"
	"strconv"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// DefaultLogCapacity is how many lines a LogView keeps in memory: the
// newest. Older ones stay in the store and in agent.log.
const DefaultLogCapacity = 20000

const (
	// logFlushInterval bounds a LogView's refreshes to 30 a second, however
	// fast lines arrive.
	logFlushInterval = time.Second / 30
	// logSpareMax bounds the pending array a LogView keeps between
	// flushes; 30 flushes a second of this many lines is 120,000 lines a
	// second.
	logSpareMax = 4096
)

// logLine is a LogLine as a LogView keeps it: small, so that a full
// ring costs little more than its text.
type logLine struct {
	seq    int64
	at     int64 // unix nanoseconds
	stream uint8
	text   string
}

// logRing holds the newest lines of a log. Lines are numbered by an
// absolute index that keeps counting as old lines fall out.
type logRing struct {
	buf   []logLine
	size  int
	first int64 // absolute index of the oldest line held
	next  int64 // absolute index the next line gets
}

func (r *logRing) len() int { return int(r.next - r.first) }

func (r *logRing) at(abs int64) *logLine { return &r.buf[abs%int64(r.size)] }

// push adds l, dropping the oldest line when the ring is full.
func (r *logRing) push(l logLine) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, l)
	} else {
		r.buf[r.next%int64(r.size)] = l
	}
	r.next++
	if r.len() > r.size {
		r.first++
	}
}

// LogView shows a live log: a virtualized list over a bounded ring of the
// newest lines, fed from any goroutine with Append and refreshed at most
// 30 times a second. It follows the tail until the person scrolls up,
// then holds still and offers a jump back; it searches, filters and
// copies.
type LogView struct {
	widget.BaseWidget

	capacity int
	// Post runs a function on the UI goroutine: fyne.Do, or the UI's
	// post (a queue in tests).
	Post func(func())
	// olderHint says where lines that are no longer held can be read.
	olderHint string
	// OnOpenOlder, when set before the view is shown, opens the whole
	// log elsewhere (agent.log in the person's app for it): the note
	// about older lines then comes with a button that calls it.
	OnOpenOlder func()
	// OnClose, when set, gets Esc and Ctrl+W (Cmd+W) typed in the search
	// field, which would swallow them, and reports whether it took them
	// (the app closes the window on them).
	OnClose func() bool

	mu        sync.Mutex // guards the fields up to timer
	pending   []logLine
	spare     []logLine
	dropped   int64 // lines that fell out of pending before a flush
	scheduled bool
	closed    bool
	lastFlush time.Time
	timer     *time.Timer

	// The rest belongs to the UI goroutine.
	ring      logRing
	evicted   int64 // lines dropped, from the ring or from pending
	trimmed   bool  // the log's oldest lines were dropped where it is kept
	follow    bool
	unseen    int // lines added while paused
	query     string
	filter    bool
	matches   []int64 // absolute indices of matching lines, ascending
	current   int64   // the current match, -1 for none
	selected  int64   // the selected line, -1 for none
	rowHeight float32
	refreshes int
	// onFlush, when set, is told after each flush how many lines it
	// added (tests and the benchmark count refreshes with it).
	onFlush func(added int)

	pane    *logPane
	search  *Field
	counter *widget.Label
	note    *widget.Label
	openOld *widget.Button
	jump    *widget.Button
	only    *widget.Check
	content fyne.CanvasObject
}

// NewLogView returns a LogView that holds the newest capacity lines
// (DefaultLogCapacity when capacity <= 0). olderHint completes the note
// shown when older lines are not held, e.g. "see agent.log".
func NewLogView(capacity int, olderHint string) *LogView {
	if capacity <= 0 {
		capacity = DefaultLogCapacity
	}
	v := &LogView{capacity: capacity, olderHint: olderHint, Post: fyne.Do, follow: true, current: -1, selected: -1}
	v.ring.size = capacity
	v.ExtendBaseWidget(v)
	v.rowHeight = logRowHeight()

	v.pane = newLogPane(v)
	v.search = NewField()
	v.search.OnClose = func() bool { return v.OnClose != nil && v.OnClose() }
	v.search.SetPlaceHolder("Search the log")
	v.search.OnChanged = v.SetQuery
	v.search.OnSubmitted = func(string) { v.NextMatch() }
	v.counter = widget.NewLabel("")
	v.only = widget.NewCheck("Matching lines only", v.SetFilter)
	prev := widget.NewButtonWithIcon("Previous", theme.MoveUpIcon(), v.PrevMatch)
	next := widget.NewButtonWithIcon("Next", theme.MoveDownIcon(), v.NextMatch)
	copyBtn := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), v.Copy)
	v.note = widget.NewLabel("")
	v.note.Importance = widget.LowImportance
	v.note.Hide()
	v.openOld = widget.NewButtonWithIcon("Open the full log", theme.FileTextIcon(), func() {
		if v.OnOpenOlder != nil {
			v.OnOpenOlder()
		}
	})
	v.openOld.Importance = widget.LowImportance
	v.openOld.Hide()
	v.jump = widget.NewButtonWithIcon("Jump to latest", theme.MoveDownIcon(), v.JumpToLatest)
	v.jump.Importance = widget.HighImportance
	v.jump.Hide()

	bar := container.NewBorder(nil, nil, nil,
		container.NewHBox(prev, next, v.counter, v.only, copyBtn), v.search)
	bottom := container.NewBorder(nil, nil, nil, v.jump, container.NewHBox(v.note, v.openOld))
	v.content = container.NewBorder(bar, bottom, nil, nil, v.pane)
	return v
}

// CreateRenderer implements fyne.Widget.
func (v *LogView) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(v.content) }

// Append adds lines; it may be called from any goroutine. The lines show
// at the next flush, at most 1/30 s away.
func (v *LogView) Append(lines ...LogLine) {
	if len(lines) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	for _, l := range lines {
		v.pending = append(v.pending, logLine{seq: l.Seq, at: l.Time.UnixNano(), stream: streamCode(l.Stream), text: l.Text})
	}
	// Lines beyond the ring's size would only fall out of it: when the
	// UI goroutine lags, pending stays bounded too.
	if n := len(v.pending); n > 2*v.capacity {
		drop := n - v.capacity
		v.dropped += int64(drop)
		v.pending = append(v.pending[:0], v.pending[drop:]...)
	}
	v.schedule()
}

// schedule arranges a flush no sooner than logFlushInterval after the
// last one. v.mu is held.
func (v *LogView) schedule() {
	if v.scheduled {
		return
	}
	v.scheduled = true
	delay := logFlushInterval - time.Since(v.lastFlush)
	if delay < 0 {
		delay = 0
	}
	v.timer = time.AfterFunc(delay, func() { v.Post(v.flush) })
}

// Close stops the flushes; lines appended afterwards are ignored.
func (v *LogView) Close() {
	v.mu.Lock()
	v.closed = true
	if v.timer != nil {
		v.timer.Stop()
	}
	v.pending = nil
	v.mu.Unlock()
}

// Clear forgets every line (the exec console's Clear).
func (v *LogView) Clear() {
	v.mu.Lock()
	v.pending = v.pending[:0]
	v.dropped = 0
	v.mu.Unlock()
	v.ring = logRing{size: v.capacity}
	v.evicted, v.unseen, v.current, v.selected = 0, 0, -1, -1
	v.matches = v.matches[:0]
	v.follow = true
	v.pane.stale = true
	v.pane.Refresh()
	v.updateChrome()
}

// flush moves the pending lines into the ring with one list refresh. It
// runs on the UI goroutine.
func (v *LogView) flush() {
	v.mu.Lock()
	batch := v.pending
	v.pending, v.spare = v.spare[:0], nil
	dropped := v.dropped
	v.dropped = 0
	v.scheduled = false
	v.lastFlush = time.Now()
	closed := v.closed
	v.mu.Unlock()
	if closed || len(batch) == 0 {
		return
	}
	v.evicted += dropped
	v.add(batch)
	// Keep the batch's array for the next one, unless a burst made it
	// big: then it goes, so that a burst does not cost memory for good.
	if cap(batch) <= logSpareMax {
		clear(batch) // let the text go
		v.mu.Lock()
		if v.spare == nil {
			v.spare = batch[:0]
		}
		v.mu.Unlock()
	}
}

func (v *LogView) add(batch []logLine) {
	oldLen := v.viewLen()
	q := v.query
	firstBefore, matchesBefore := v.ring.first, len(v.matches)
	for _, l := range batch {
		abs := v.ring.next
		v.ring.push(l)
		if q != "" && containsFold(l.text, q) {
			v.matches = append(v.matches, abs)
		}
	}
	v.evicted += v.ring.first - firstBefore
	added := len(batch)
	if v.filtering() {
		added = len(v.matches) - matchesBefore
	}
	v.trimMatches()
	removed := oldLen + added - v.viewLen() // rows that fell out above
	if v.follow {
		v.pane.top = v.pane.maxTop()
	} else {
		// Move up with the content, so that the rows the person reads
		// stay where they are.
		v.unseen += added
		v.pane.top = max(v.pane.top-removed, 0)
	}
	v.pane.Refresh()
	v.refreshes++
	v.updateChrome()
	if v.onFlush != nil {
		v.onFlush(len(batch))
	}
}

// trimMatches drops matches that fell out of the ring.
func (v *LogView) trimMatches() {
	i := 0
	for i < len(v.matches) && v.matches[i] < v.ring.first {
		i++
	}
	if i > 0 {
		v.matches = append(v.matches[:0], v.matches[i:]...)
	}
	if v.current >= 0 && v.current < v.ring.first {
		v.current = -1
	}
	if v.selected >= 0 && v.selected < v.ring.first {
		v.selected = -1
	}
}

// filtering reports whether the list shows only matching lines.
func (v *LogView) filtering() bool { return v.filter && v.query != "" }

func (v *LogView) viewLen() int {
	if v.filtering() {
		return len(v.matches)
	}
	return v.ring.len()
}

// rowAbs is the absolute index of the line a row shows, -1 if none.
func (v *LogView) rowAbs(id int) int64 {
	if v.filtering() {
		if id < 0 || id >= len(v.matches) {
			return -1
		}
		return v.matches[id]
	}
	if id < 0 || id >= v.ring.len() {
		return -1
	}
	return v.ring.first + int64(id)
}

// rowIndex is the row showing the line abs, or where it would be: the
// number of rows above it.
func (v *LogView) rowIndex(abs int64) int {
	if abs < 0 {
		return 0
	}
	if v.filtering() {
		return v.rowIndexInMatches(abs)
	}
	return int(abs - v.ring.first)
}

// rowBackground is the background of the row showing line abs: the
// selection, the current match, another match, or none.
func (v *LogView) rowBackground(abs int64) color.Color {
	switch {
	case abs == v.selected:
		return theme.Color(theme.ColorNameSelection)
	case abs == v.current:
		return withAlpha(theme.Color(theme.ColorNameWarning), 0x70)
	case v.isMatch(abs):
		return withAlpha(theme.Color(theme.ColorNameWarning), 0x30)
	}
	return color.Transparent
}

// updateChrome shows the note about older lines, the jump button and the
// match counter as they now are.
func (v *LogView) updateChrome() {
	if n := v.older(); n > 0 {
		msg := formatCount(n) + " older lines are not shown here"
		if v.trimmed {
			msg = "Earlier output trimmed: " + msg
		}
		if v.OnOpenOlder != nil {
			v.openOld.Show()
		} else if v.olderHint != "" {
			msg += " (" + v.olderHint + ")"
		}
		v.note.SetText(msg)
		v.note.Show()
	} else {
		v.note.Hide()
		v.openOld.Hide()
	}
	if v.follow {
		v.jump.Hide()
	} else {
		txt := "Jump to latest"
		if v.unseen > 0 {
			txt += " (" + formatCount(int64(v.unseen)) + " new)"
		}
		if v.jump.Text != txt {
			v.jump.SetText(txt)
		}
		v.jump.Show()
	}
	switch {
	case v.query == "":
		v.counter.SetText("")
	case len(v.matches) == 0:
		v.counter.SetText("no match")
	case v.current >= 0:
		v.counter.SetText(strconv.Itoa(v.rowIndexInMatches(v.current)+1) + " of " + strconv.Itoa(len(v.matches)))
	default:
		v.counter.SetText(strconv.Itoa(len(v.matches)) + " matches")
	}
}

// older counts the lines of the log before the oldest one held.
func (v *LogView) older() int64 {
	if v.ring.len() > 0 {
		if s := v.ring.at(v.ring.first).seq; s > 1 {
			return s - 1
		}
	}
	return v.evicted
}

// SetTrimmed says that the log's oldest lines were dropped where it is
// kept (the store's caps), so the note about older lines begins "Earlier
// output trimmed". It may be called from any goroutine.
func (v *LogView) SetTrimmed() {
	v.Post(func() {
		v.trimmed = true
		v.updateChrome()
	})
}

// Note is the note shown under the log ("" when hidden).
func (v *LogView) Note() string {
	if !v.note.Visible() {
		return ""
	}
	return v.note.Text
}

// Following reports whether the view follows the tail.
func (v *LogView) Following() bool { return v.follow }

// Len is the number of lines held.
func (v *LogView) Len() int { return v.ring.len() }

// Lines returns the text of the rows shown (every line held, or the
// matching ones when filtering).
func (v *LogView) Lines() []string {
	n := v.viewLen()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, v.ring.at(v.rowAbs(i)).text)
	}
	return out
}

// Held is every line held, oldest first, as it was appended (a stream
// the view does not know reads back as stdout).
func (v *LogView) Held() []LogLine {
	out := make([]LogLine, 0, v.ring.len())
	for abs := v.ring.first; abs < v.ring.next; abs++ {
		l := v.ring.at(abs)
		out = append(out, LogLine{Seq: l.seq, Stream: streamNames[l.stream], Time: time.Unix(0, l.at), Text: l.text})
	}
	return out
}

// JumpToLatest follows the tail again.
func (v *LogView) JumpToLatest() {
	v.follow, v.unseen, v.current = true, 0, -1
	v.pane.scrollTo(v.pane.maxTop(), false)
	v.updateChrome()
}
