package session

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/vm/caplog"
)

// TestPendingLogIsBounded: when the store falls behind a flood, the lines
// a session holds for it stay under maxPendingLog, the newest are kept,
// and the next flush stores them.
func TestPendingLogIsBounded(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.AddProject(ctx, store.Project{Path: "/repo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, store.Session{ID: "s1", ProjectID: p.ID, State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	l := newLogSink("s1", st, newHub(), slog.New(slog.DiscardHandler), &sync.Mutex{})
	text := strings.Repeat("f", maxLogText)
	const lines = 3 * maxPendingLog / maxLogText // no flusher runs: nothing takes them
	for range lines {
		l.line("stdout", text)
	}
	l.mu.Lock()
	held, size, dropped := len(l.pending), l.pendingBytes, l.dropped
	last := l.pending[len(l.pending)-1].Seq
	l.mu.Unlock()
	if size > maxPendingLog || dropped == 0 {
		t.Errorf("after %d lines of %d bytes with no flush, %d lines (%d bytes) are held and %d dropped; want at most %d bytes held", lines, maxLogText, held, size, dropped, maxPendingLog)
	}
	if last != lines {
		t.Errorf("the newest line held is %d, want %d", last, lines)
	}
	l.flush()
	stored, err := st.LastLogs(ctx, "s1", 1)
	if err != nil || len(stored) != 1 || stored[0].Seq != lines {
		t.Errorf("after the flush the store's newest line is %+v (%v), want line %d", stored, err, lines)
	}
}

// TestTranscriptReadIsBounded: a transcript written far past its cap
// keeps its newest entries, and a read of it takes only its newest
// bytes, begins with "earlier output trimmed", and gives the newest
// entries in order; a transcript with nothing dropped reads whole,
// without the note.
func TestTranscriptReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "transcript.jsonl")
	const cap = 64 << 10
	w, err := caplog.Open(path, cap, []byte(transcriptMarker), 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	lineLen := 0
	for i := range n {
		b, _ := json.Marshal(Entry{Kind: EntryText, Text: fmt.Sprintf("entry %06d", i)})
		w.Write(append(b, '\n'))
		lineLen = len(b) + 1
	}
	w.Close()
	var size int64
	for _, p := range []string{path, caplog.Older(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > cap {
		t.Errorf("the transcript and its older copy hold %d bytes, past the cap %d", size, cap)
	}
	check := func(name string, got []Entry, wantTrimmed bool, last int) {
		t.Helper()
		if len(got) == 0 {
			t.Fatalf("%s: no entries", name)
		}
		if trimmed := got[0].Kind == EntryTrimmed; trimmed != wantTrimmed {
			t.Errorf("%s: first entry %+v; want the trimmed note %v", name, got[0], wantTrimmed)
		}
		if wantTrimmed {
			if got[0].Text != TrimmedText {
				t.Errorf("%s: the note says %q", name, got[0].Text)
			}
			got = got[1:]
		}
		first := last - len(got) + 1
		for i, e := range got {
			if want := fmt.Sprintf("entry %06d", first+i); e.Kind != EntryText || e.Text != want {
				t.Fatalf("%s: entry %d is %+v, want %q: the newest entries in order", name, i, e, want)
			}
		}
	}
	all, err := readTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	check("the capped transcript", all, true, n-1)
	if len(all) < cap/2/lineLen {
		t.Errorf("the capped transcript read %d entries; want at least half the cap's worth", len(all))
	}

	// A read of the newest 2,000 bytes only.
	tail, err := readTranscriptTail(path, 2000, maxTranscriptLine)
	if err != nil {
		t.Fatal(err)
	}
	check("a 2,000-byte read", tail, true, n-1)
	if len(tail) > 2000/lineLen+2 {
		t.Errorf("a 2,000-byte read gave %d entries", len(tail))
	}

	// Nothing dropped: read whole, no note, an overlong line skipped.
	small := filepath.Join(dir, "small.jsonl")
	var b []byte
	for i := range 10 {
		e, _ := json.Marshal(Entry{Kind: EntryText, Text: fmt.Sprintf("entry %06d", i)})
		b = append(append(b, e...), '\n')
		if i == 4 {
			b = append(b, `{"kind":"text","text":"`+strings.Repeat("x", maxTranscriptLine)+`"}`+"\n"...)
		}
	}
	os.WriteFile(small, b, 0o600)
	whole, err := readTranscript(small)
	if err != nil {
		t.Fatal(err)
	}
	check("a small transcript", whole, false, 9)
	if len(whole) != 10 {
		t.Errorf("a small transcript read %d entries, want 10", len(whole))
	}
	if got, err := readTranscript(filepath.Join(dir, "none.jsonl")); err != nil || len(got) != 0 {
		t.Errorf("a missing transcript: %v, %v", got, err)
	}
}

// TestAgentLogLinesAreBounded: an agent that prints one 1 MiB line has it
// stored, logged and published cut to maxLogText with a note, and the
// line after it whole.
func TestAgentLogLinesAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", "head -c 1048576 /dev/zero | tr '\\0' a; echo; echo after"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	lines, err := f.m.Logs(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var long, after bool
	for _, l := range lines {
		if strings.HasPrefix(l.Text, "aaaa") {
			long = true
			want := fmt.Sprintf(" … [line truncated: %d bytes dropped]", 1<<20-maxLogText)
			if len(l.Text) != maxLogText+len(want) || !strings.HasSuffix(l.Text, want) {
				t.Errorf("the 1 MiB line is stored as %d bytes ending %q; want %d bytes and the note %q",
					len(l.Text), l.Text[max(0, len(l.Text)-60):], maxLogText, want)
			}
		}
		after = after || l.Text == "after"
	}
	if !long || !after {
		t.Errorf("stored lines: the long one %v, the one after %v; want both", long, after)
	}
	b, err := os.ReadFile(f.paths.SessionDir(s.ID).AgentLog())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4*maxLogText {
		t.Errorf("agent.log has %d bytes for a 1 MiB line cut to %d", len(b), maxLogText)
	}
}

// TestTranscriptFileIsCapped: a session's transcript written past
// config.TranscriptMax (entries of 1 MiB each, cut to maxLogText) keeps
// at most the cap in transcript.jsonl and its older copy, and reads back
// as its newest entries after "earlier output trimmed".
func TestTranscriptFileIsCapped(t *testing.T) {
	dir := config.NewSessionDir(t.TempDir())
	st, err := store.Open(filepath.Join(t.TempDir(), "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := newLogSink("s1", st, newHub(), slog.New(slog.DiscardHandler), &sync.Mutex{})
	if err := l.open(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("r", 1<<20)
	n := 2*config.TranscriptMax/maxLogText + 10
	for i := range n {
		l.entry(Entry{Kind: EntryToolResult, ToolID: fmt.Sprintf("t%06d", i), Text: big})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, p := range []string{dir.Transcript(), caplog.Older(dir.Transcript())} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > config.TranscriptMax {
		t.Errorf("%d entries: the transcript holds %d bytes, past the cap %d", n, size, config.TranscriptMax)
	}
	got, err := readTranscript(dir.Transcript())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0].Kind != EntryTrimmed {
		t.Fatalf("read %d entries, the first %+v: want the trimmed note first", len(got), got[0])
	}
	last := got[len(got)-1]
	if want := fmt.Sprintf("t%06d", n-1); last.ToolID != want || len(last.Text) > maxLogText+100 {
		t.Errorf("the newest entry read is %s with %d bytes of text, want %s cut to about %d", last.ToolID, len(last.Text), want, maxLogText)
	}
}
