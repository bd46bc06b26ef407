package widget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

const (
	// transcriptMaxRows bounds the rows a TranscriptView holds; the
	// oldest go first (the whole transcript stays in transcript.jsonl).
	transcriptMaxRows = 2000
	// transcriptMaxText bounds the text of one tool input or result shown.
	transcriptMaxText = 8000
)

// TranscriptView shows a Claude Code session's transcript: the person's
// messages, the assistant's text, tool calls folded with their results,
// and each turn's cost and duration. It is touched on the UI goroutine
// only.
type TranscriptView struct {
	widget.BaseWidget

	box     *fyne.Container
	scroll  *container.Scroll
	empty   *widget.Label
	dropped *widget.Label
	tools   map[string]*toolRow // by tool id, to attach results
	rows    []transcriptRow
	gone    int    // rows dropped by trim
	trimmed string // what an EntryTrimmed said: older entries are not there
	content fyne.CanvasObject
}

// transcriptRow is one shown entry.
type transcriptRow struct {
	kind   EntryKind
	obj    fyne.CanvasObject
	toolID string
}

// toolRow is a folded tool call: its title line, and input and result
// when opened.
type toolRow struct {
	acc    *widget.Accordion
	item   *widget.AccordionItem
	title  string
	result *widget.Label
	done   bool
	// started is when the agent called the tool; ended is set when its
	// turn ended without the call's result (an interrupt, a stop), so
	// the row's clock stops.
	started time.Time
	ended   bool
}

// NewTranscriptView returns an empty transcript.
func NewTranscriptView() *TranscriptView {
	t := &TranscriptView{box: container.NewVBox(), tools: map[string]*toolRow{},
		empty: widget.NewLabel("No transcript yet."), dropped: widget.NewLabel("")}
	t.empty.Importance = widget.LowImportance
	t.empty.Wrapping = fyne.TextWrapWord
	t.dropped.Importance = widget.LowImportance
	t.dropped.Hide()
	t.scroll = container.NewVScroll(t.box)
	// The entries wrap; a row that cannot (a tool call's title, a long
	// word in a code block) is clipped rather than widening the window.
	t.content = container.NewBorder(container.NewVBox(t.empty, t.dropped), nil, nil, nil, Fit(t.scroll))
	t.ExtendBaseWidget(t)
	return t
}

// CreateRenderer implements fyne.Widget.
func (t *TranscriptView) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(t.content)
}

// SetEmptyText sets what shows while there are no entries.
func (t *TranscriptView) SetEmptyText(s string) { t.empty.SetText(s) }

// SetEntries replaces the transcript.
func (t *TranscriptView) SetEntries(es []Entry) {
	t.box.RemoveAll()
	t.rows = t.rows[:0]
	t.gone = 0
	t.trimmed = ""
	t.dropped.Hide()
	clear(t.tools)
	for _, e := range es {
		t.add(e)
	}
	t.trim()
	t.box.Refresh()
	t.scroll.ScrollToBottom()
	t.showEmpty()
}

// Add appends one entry, following the bottom if it was shown.
func (t *TranscriptView) Add(e Entry) {
	// The laid-out height, not MinSize: that would measure every row.
	atBottom := t.scroll.Offset.Y >= t.box.Size().Height-t.scroll.Size().Height-theme.Padding()*4
	t.add(e)
	t.trim()
	if atBottom {
		t.scroll.ScrollToBottom()
	}
	t.showEmpty()
}

// Len is the number of rows shown (a tool call and its result are one).
func (t *TranscriptView) Len() int { return len(t.rows) }

// Kinds is the kind of each row shown, oldest first.
func (t *TranscriptView) Kinds() []EntryKind {
	out := make([]EntryKind, len(t.rows))
	for i, r := range t.rows {
		out[i] = r.kind
	}
	return out
}

// RowText is the text of row i when the row is one label (a result, a
// system line, a result without its call), else "".
func (t *TranscriptView) RowText(i int) string {
	if i < 0 || i >= len(t.rows) {
		return ""
	}
	if l, ok := t.rows[i].obj.(*widget.Label); ok {
		return l.Text
	}
	return ""
}

// Tool is the folded row of tool call id: its title line, and whether
// its result has come; ok is false when no such call is shown.
func (t *TranscriptView) Tool(id string) (title string, done, ok bool) {
	tr := t.tools[id]
	if tr == nil {
		return "", false, false
	}
	return tr.Title(), tr.done, true
}

func (t *TranscriptView) showEmpty() {
	if len(t.rows) == 0 {
		t.empty.Show()
	} else {
		t.empty.Hide()
	}
}

func (t *TranscriptView) add(e Entry) {
	if e.Kind == EntryTrimmed {
		t.trimmed = e.Text
		t.showDropped()
		return
	}
	if e.Kind == EntryToolResult {
		if tr := t.tools[e.ToolID]; tr != nil {
			tr.setResult(e)
			return
		}
	}
	if e.Kind == EntryResult {
		// The turn is over: a call still without a result runs no more.
		t.EndTools()
	}
	obj, tr := transcriptObject(e)
	if obj == nil {
		return
	}
	row := transcriptRow{kind: e.Kind, obj: obj}
	if tr != nil && e.ToolID != "" {
		t.tools[e.ToolID] = tr
		row.toolID = e.ToolID
	}
	t.rows = append(t.rows, row)
	t.box.Add(obj)
}

// trim drops the oldest rows beyond transcriptMaxRows.
func (t *TranscriptView) trim() {
	over := len(t.rows) - transcriptMaxRows
	if over <= 0 {
		return
	}
	for _, r := range t.rows[:over] {
		if r.toolID != "" {
			delete(t.tools, r.toolID)
		}
	}
	t.rows = append(t.rows[:0], t.rows[over:]...)
	objs := make([]fyne.CanvasObject, len(t.rows))
	for i, r := range t.rows {
		objs[i] = r.obj
	}
	t.box.Objects = objs
	t.box.Refresh()
	t.gone += over
	t.showDropped()
}

// showDropped says what of the transcript is not shown: entries the
// view let go, and older ones the read did not have.
func (t *TranscriptView) showDropped() {
	var parts []string
	if t.trimmed != "" {
		parts = append(parts, strings.ToUpper(t.trimmed[:1])+t.trimmed[1:])
	}
	if t.gone > 0 {
		parts = append(parts, fmt.Sprintf("%s earlier entries are not shown (transcript.jsonl keeps the newest)", formatCount(int64(t.gone))))
	}
	if len(parts) == 0 {
		t.dropped.Hide()
		return
	}
	t.dropped.SetText(strings.Join(parts, "; "))
	t.dropped.Show()
}

// Dropped is the note above the transcript ("" when hidden).
func (t *TranscriptView) Dropped() string {
	if !t.dropped.Visible() {
		return ""
	}
	return t.dropped.Text
}

// transcriptObject makes the row for e; tool calls also return their
// toolRow, for the result to come.
func transcriptObject(e Entry) (fyne.CanvasObject, *toolRow) {
	switch e.Kind {
	case EntryUser:
		who := widget.NewLabelWithStyle("You · "+e.Time.Format("15:04"), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		who.Importance = widget.HighImportance
		msg := widget.NewLabel(e.Text)
		msg.Wrapping = fyne.TextWrapWord
		return container.NewVBox(who, msg), nil
	case EntryText:
		md := widget.NewRichTextFromMarkdown(e.Text)
		md.Wrapping = fyne.TextWrapWord
		return md, nil
	case EntryThinking:
		l := widget.NewLabel(ClipRunes(e.Text, transcriptMaxText))
		l.Wrapping = fyne.TextWrapWord
		l.TextStyle.Italic = true
		l.Importance = widget.LowImportance
		acc := widget.NewAccordion(widget.NewAccordionItem("Thinking…", l))
		return acc, nil
	case EntryToolUse:
		tr := newToolRow(e)
		return tr.acc, tr
	case EntryToolResult: // a result whose call we do not have
		l := widget.NewLabel("Result: " + ClipRunes(e.Text, transcriptMaxText))
		l.Wrapping = fyne.TextWrapWord
		if e.IsError {
			l.Importance = widget.DangerImportance
		}
		return l, nil
	case EntryResult:
		return resultLabel(e), nil
	case EntrySystem:
		l := widget.NewLabel(e.Text)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.LowImportance
		return l, nil
	case EntryRetry:
		l := widget.NewLabel("Retrying: " + e.Text)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.WarningImportance
		return l, nil
	}
	return nil, nil
}

func newToolRow(e Entry) *toolRow {
	input := widget.NewLabel(prettyJSON(e.Input))
	input.TextStyle.Monospace = true
	input.Wrapping = fyne.TextWrapBreak
	result := widget.NewLabel("Running…")
	result.TextStyle.Monospace = true
	result.Wrapping = fyne.TextWrapBreak
	result.Importance = widget.LowImportance
	heading := func(s string) *widget.Label {
		return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	tr := &toolRow{title: toolTitle(e), result: result, started: e.Time}
	tr.item = widget.NewAccordionItem("… "+tr.title, container.NewVBox(heading("Input"), input, heading("Result"), result))
	tr.acc = widget.NewAccordion(tr.item)
	return tr
}

func (tr *toolRow) setResult(e Entry) {
	tr.done = true
	text := strings.TrimRight(e.Text, "\n")
	if text == "" {
		text = "(no output)"
	}
	tr.result.SetText(ClipRunes(text, transcriptMaxText))
	mark := "• "
	if e.IsError {
		mark = "× "
		tr.result.Importance = widget.DangerImportance
	} else {
		tr.result.Importance = widget.MediumImportance
	}
	tr.result.Refresh()
	tr.item.Title = mark + tr.title
	tr.acc.Refresh()
}

// Tick shows how long each tool call of the current turn has been
// running, on its folded line ("⋯ Bash go test ./... · 42 s"). The
// window calls it every second while the session runs.
func (t *TranscriptView) Tick(now time.Time) {
	for _, tr := range t.tools {
		if tr.done || tr.ended || tr.started.IsZero() {
			continue
		}
		title := "… " + tr.title + " · " + Elapsed(now.Sub(tr.started))
		if title != tr.item.Title {
			tr.item.Title = title
			tr.acc.Refresh()
		}
	}
}

// EndTools stops the clock of every call still without a result: its
// turn ended, or its session did.
func (t *TranscriptView) EndTools() {
	for _, tr := range t.tools {
		if !tr.done && !tr.ended {
			tr.ended = true
			tr.item.Title = "… " + tr.title
			tr.acc.Refresh()
		}
	}
}

// Elapsed is a running tool's time in words: "42 s", "3 min 05 s".
func Elapsed(d time.Duration) string {
	s := int(max(d, 0) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %02d s", s/60, s%60)
}

// Title is the tool call's folded line.
func (tr *toolRow) Title() string { return tr.item.Title }

// toolTitle is a tool call on one line: its name and the input that
// matters most (a command, a path, a pattern), else the compact input.
func toolTitle(e Entry) string {
	summary := e.Input
	var in map[string]any
	if json.Unmarshal([]byte(e.Input), &in) == nil {
		for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description", "prompt"} {
			if s, ok := in[k].(string); ok && s != "" {
				summary = s
				break
			}
		}
	}
	summary = strings.Join(strings.Fields(summary), " ")
	// The title is a button's, which cannot truncate: it is cut here to
	// what fits a narrow window. The whole input is under the title.
	if r := []rune(summary); len(r) > toolTitleMax {
		summary = string(r[:toolTitleMax-1]) + "…"
	}
	return e.Tool + "  " + summary
}

// toolTitleMax is how many characters of a tool call's input its title
// shows: about 600 points.
const toolTitleMax = 64

// turnsText is "1 turn", "3 turns".
func turnsText(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return fmt.Sprintf("%d turns", n)
}

func resultLabel(e Entry) *widget.Label {
	parts := []string{}
	if e.Turns > 0 {
		parts = append(parts, turnsText(e.Turns))
	}
	if e.Duration > 0 {
		parts = append(parts, RoundDuration(e.Duration).String())
	}
	parts = append(parts, fmt.Sprintf("$%.4f", e.CostUSD))
	text := "Turn done · " + strings.Join(parts, " · ")
	l := widget.NewLabel(text)
	l.TextStyle.Bold = true
	l.Importance = widget.SuccessImportance
	if e.IsError {
		l.SetText("Turn failed · " + strings.Join(parts, " · ") + firstLineOf(e.Text))
		if e.Problem != "" {
			l.SetText("Turn failed: " + e.Problem)
		}
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.DangerImportance
	}
	return l
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return ": " + ClipRunes(s, 200)
}

func prettyJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return ClipRunes(s, transcriptMaxText)
	}
	return ClipRunes(b.String(), transcriptMaxText)
}
