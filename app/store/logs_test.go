package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// seqs lists the Seq of each line.
func seqs(lines []LogLine) []int64 {
	out := make([]int64, len(lines))
	for i, l := range lines {
		out[i] = l.Seq
	}
	return out
}

func TestAppendLogsNumbersAndKeepsLines(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	_, x := seed(t, s)
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)
	long := strings.Repeat("0123456789", 10000)
	in := []LogLine{
		{Stream: "system", Time: t0, Text: "booting ✓"},
		{Stream: "stdout", Time: t0.Add(time.Millisecond), Text: "tab\there, \r carriage, 🙂, ünïcødé"},
		{Stream: "stderr", Time: t0.Add(2 * time.Millisecond), Text: ""},
		{Stream: "exec", Time: t0.Add(3 * time.Millisecond), Text: long},
	}
	if err := s.AppendLogs(ctx, x.ID, in); err != nil {
		t.Fatal(err)
	}
	if in[0].Seq != 0 {
		t.Errorf("AppendLogs changed its argument: %+v", in[0])
	}
	got, err := s.Logs(ctx, x.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs(got)) != "[1 2 3 4]" {
		t.Fatalf("seqs %v, want [1 2 3 4]", seqs(got))
	}
	for i, l := range got {
		if l.Stream != in[i].Stream || l.Text != in[i].Text || !l.Time.Equal(in[i].Time) {
			t.Errorf("line %d: got %q %v %.40q, want %q %v %.40q", i, l.Stream, l.Time, l.Text, in[i].Stream, in[i].Time, in[i].Text)
		}
	}

	// Given numbers are kept; unnumbered lines go on after the highest;
	// a number already stored keeps what was stored (a retried batch);
	// a gap below the highest may be filled.
	steps := []struct {
		batch []LogLine
		want  string
	}{
		{[]LogLine{{Seq: 10, Text: "ten"}, {Text: "eleven"}}, "[1 2 3 4 10 11]"},
		{[]LogLine{{Seq: 11, Text: "retried eleven"}, {Seq: 12, Text: "twelve"}}, "[1 2 3 4 10 11 12]"},
		{[]LogLine{{Seq: 5, Text: "five, late"}}, "[1 2 3 4 5 10 11 12]"},
		{[]LogLine{{Text: "thirteen"}}, "[1 2 3 4 5 10 11 12 13]"},
	}
	for _, st := range steps {
		if err := s.AppendLogs(ctx, x.ID, st.batch); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Logs(ctx, x.ID, 0, 0)
		if fmt.Sprint(seqs(got)) != st.want {
			t.Errorf("after %+v: seqs %v, want %s", st.batch, seqs(got), st.want)
		}
	}
	if l, _ := s.Logs(ctx, x.ID, 10, 2); len(l) != 2 || l[0].Text != "eleven" || l[1].Text != "twelve" {
		t.Errorf("lines 11 and 12: %+v", l)
	}

	// A large batch.
	big := make([]LogLine, 1207)
	for i := range big {
		big[i] = LogLine{Stream: "stdout", Text: fmt.Sprintf("big %d", i)}
	}
	if err := s.AppendLogs(ctx, x.ID, big); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Logs(ctx, x.ID, 13, 0); len(l) != len(big) || l[0].Seq != 14 || l[len(l)-1].Seq != int64(13+len(big)) || l[len(l)-1].Text != fmt.Sprintf("big %d", len(big)-1) {
		t.Errorf("big batch: %d lines, want %d numbered from 14", len(l), len(big))
	}

	// Errors and edges.
	if err := s.AppendLogs(ctx, x.ID, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := s.AppendLogs(ctx, "nope", []LogLine{{Text: "x"}}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "sandbar ls") {
		t.Errorf("lines of a missing session: %v", err)
	}
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Text: "fine"}, {Seq: -1, Text: "bad"}}); err == nil || !strings.Contains(err.Error(), "leave Seq 0") {
		t.Errorf("negative seq: %v", err)
	}
	if l, _ := s.LastLogs(ctx, x.ID, 1); l[0].Text != fmt.Sprintf("big %d", len(big)-1) {
		t.Errorf("a refused batch stored lines: %+v", l)
	}
}

func TestLogsAndLastLogs(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	_, x := seed(t, s)
	var in []LogLine
	for i := range 25 {
		in = append(in, LogLine{Stream: "stdout", Text: fmt.Sprintf("line %d", i+1)})
	}
	if err := s.AppendLogs(ctx, x.ID, in); err != nil {
		t.Fatal(err)
	}
	// Paging as `sandbar logs -f` does.
	var after int64
	var pages []int
	for {
		page, err := s.Logs(ctx, x.ID, after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, len(page))
		after = page[len(page)-1].Seq
	}
	if fmt.Sprint(pages) != "[10 10 5]" || after != 25 {
		t.Errorf("pages %v ending at %d, want [10 10 5] ending at 25", pages, after)
	}
	for _, c := range []struct {
		after int64
		limit int
		want  string
	}{
		{0, 0, "1-25"}, {0, -1, "1-25"}, {20, 0, "21-25"}, {24, 100, "25-25"}, {25, 10, ""}, {1000, 10, ""},
	} {
		l, err := s.Logs(ctx, x.ID, c.after, c.limit)
		got := ""
		if len(l) > 0 {
			got = fmt.Sprintf("%d-%d", l[0].Seq, l[len(l)-1].Seq)
		}
		if err != nil || got != c.want {
			t.Errorf("Logs(after %d, limit %d) = %s (%v), want %s", c.after, c.limit, got, err, c.want)
		}
	}
	for _, c := range []struct {
		n    int
		want string
	}{{3, "[23 24 25]"}, {1, "[25]"}, {100, fmt.Sprint(seqs(mustLogs(t, s, x.ID)))}, {0, "[]"}, {-2, "[]"}} {
		l, err := s.LastLogs(ctx, x.ID, c.n)
		if err != nil || fmt.Sprint(seqs(l)) != c.want {
			t.Errorf("LastLogs(%d) = %v (%v), want %s", c.n, seqs(l), err, c.want)
		}
	}
	if l, err := s.Logs(ctx, "nope", 0, 10); err != nil || len(l) != 0 {
		t.Errorf("Logs of a missing session: %v, %v; want none", l, err)
	}
	if l, err := s.LastLogs(ctx, "nope", 10); err != nil || len(l) != 0 {
		t.Errorf("LastLogs of a missing session: %v, %v; want none", l, err)
	}
}

func mustLogs(t *testing.T, s *Store, id string) []LogLine {
	t.Helper()
	l, err := s.Logs(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLogWindow: with log_window 1000, 5000 lines appended in batches
// leave the newest 1000, and numbering goes on from 5000.
func TestLogWindow(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p, x := seed(t, s)
	if err := s.CreateSession(ctx, Session{ID: "quiet", ProjectID: p.ID, State: "running"}); err != nil {
		t.Fatal(err)
	}
	quiet := make([]LogLine, 10)
	for i := range quiet {
		quiet[i] = LogLine{Stream: "stdout", Text: "quiet"}
	}
	if err := s.AppendLogs(ctx, "quiet", quiet); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSetting(ctx, SettingLogWindow, "1000"); err != nil {
		t.Fatal(err)
	}
	for b := range 50 {
		lines := make([]LogLine, 100)
		for i := range lines {
			lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: fmt.Sprintf("line %d", b*100+i+1)}
		}
		if err := s.AppendLogs(ctx, x.ID, lines); err != nil {
			t.Fatal(err)
		}
	}
	all := mustLogs(t, s, x.ID)
	if len(all) != 1000 || all[0].Seq != 4001 || all[999].Seq != 5000 || all[0].Text != "line 4001" || all[999].Text != "line 5000" {
		t.Fatalf("window: %d lines, %d..%d; want 1000 lines, 4001..5000", len(all), all[0].Seq, all[len(all)-1].Seq)
	}
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "one more"}}); err != nil {
		t.Fatal(err)
	}
	all = mustLogs(t, s, x.ID)
	if len(all) != 1000 || all[0].Seq != 4002 || all[999].Seq != 5001 || all[999].Text != "one more" {
		t.Errorf("after one more: %d lines, %d..%d; want 1000 lines, 4002..5001", len(all), all[0].Seq, all[len(all)-1].Seq)
	}
	if l := mustLogs(t, s, "quiet"); len(l) != 10 {
		t.Errorf("another session lost lines to this one's window: %d of 10 left", len(l))
	}

	// Shrinking the window trims at the next append.
	if err := s.SetSetting(ctx, SettingLogWindow, "10"); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "last"}}); err != nil {
		t.Fatal(err)
	}
	if l := mustLogs(t, s, x.ID); len(l) != 10 || l[0].Seq != 4993 {
		t.Errorf("after shrinking the window: %d lines from %d, want 10 from 4993", len(l), l[0].Seq)
	}

	// A value not set through SetSetting (by hand, say) that is not a
	// number leaves the default in force rather than failing appends.
	if _, err := s.db.Exec("UPDATE settings SET value = 'lots' WHERE key = ?", SettingLogWindow); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "still fine"}}); err != nil {
		t.Errorf("append with a bad log_window: %v", err)
	}
	if l := mustLogs(t, s, x.ID); len(l) != 11 {
		t.Errorf("with a bad log_window: %d lines, want 11 (the default window keeps them all)", len(l))
	}
}

func TestEvents(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	_, x := seed(t, s)
	t0 := time.Date(2025, 6, 7, 8, 9, 10, 11, time.UTC)
	before := time.Now()
	for _, e := range []Event{
		{Seq: 99, Time: t0, Kind: "state", Detail: "booting"}, // Seq is the store's to give
		{Kind: "timing", Detail: "boot 1.2s"},
		{Kind: "error", Detail: "agent: exit status 2 — ünïcødé"},
	} {
		if err := s.AppendEvent(ctx, x.ID, e); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.Events(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 3 || fmt.Sprint(ev[0].Seq, ev[1].Seq, ev[2].Seq) != "1 2 3" {
		t.Fatalf("events %+v, want 3 numbered 1 2 3", ev)
	}
	if !ev[0].Time.Equal(t0) || ev[0].Kind != "state" || ev[0].Detail != "booting" {
		t.Errorf("first event %+v", ev[0])
	}
	if ev[1].Time.Before(before) || ev[2].Detail != "agent: exit status 2 — ünïcødé" {
		t.Errorf("events %+v: want the time defaulted to now and the detail kept", ev)
	}
	if err := s.AppendEvent(ctx, "nope", Event{Kind: "state"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("event of a missing session: %v", err)
	}
	if err := s.AppendEvent(ctx, x.ID, Event{Detail: "no kind"}); err == nil {
		t.Error("an event without a kind was recorded")
	}
	if ev, err := s.Events(ctx, "nope"); err != nil || len(ev) != 0 {
		t.Errorf("events of a missing session: %v, %v; want none", ev, err)
	}
}
