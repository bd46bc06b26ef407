package widget

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
)

// TestLogViewSaysEarlierOutputTrimmed: a log whose oldest lines the store
// dropped says "Earlier output trimmed" in its note about older lines; one
// that only holds fewer lines than were written does not.
func TestLogViewSaysEarlierOutputTrimmed(t *testing.T) {
	v, q := newTestLogView(t, 1000)
	v.SetTrimmed()
	v.Append(logLines(501, 100, "stdout")...)
	q.WaitFor(t, 10*time.Second, "line 600", func() bool { return logHas(v, "line 600") })
	if note := v.Note(); !strings.HasPrefix(note, "Earlier output trimmed: 500 older lines") {
		t.Errorf("note %q: want it to say earlier output was trimmed, and how many lines", note)
	}

	plain, pq := newTestLogView(t, 50)
	plain.Append(logLines(1, 100, "stdout")...)
	pq.WaitFor(t, 10*time.Second, "line 100", func() bool { return logHas(plain, "line 100") })
	if note := plain.Note(); strings.Contains(note, "trimmed") || !strings.Contains(note, "50 older lines") {
		t.Errorf("note %q of a view that let lines go: want the count, not \"trimmed\"", note)
	}
}

// TestTranscriptSaysEarlierOutputTrimmed: a transcript read that begins
// with the trimmed entry shows it as a note above the entries, not a row.
func TestTranscriptSaysEarlierOutputTrimmed(t *testing.T) {
	test.NewTempApp(t)
	tv := NewTranscriptView()
	tv.SetEntries([]Entry{
		{Kind: EntryTrimmed, Text: session.TrimmedText},
		{Kind: EntrySystem, Time: time.Now(), Text: "agent started"},
	})
	if got := tv.Dropped(); !strings.HasPrefix(got, "Earlier output trimmed") {
		t.Errorf("the note above the transcript is %q, want it to begin \"Earlier output trimmed\"", got)
	}
	if tv.Len() != 1 || tv.Kinds()[0] != EntrySystem {
		t.Errorf("rows %v: want the one entry, the note apart", tv.Kinds())
	}
	tv.SetEntries([]Entry{{Kind: EntrySystem, Time: time.Now(), Text: "agent started"}})
	if got := tv.Dropped(); got != "" {
		t.Errorf("a whole transcript shows the note %q", got)
	}
}
