package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// storedText is the session's stored log text in bytes, summed by SQLite.
func storedText(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	var n int64
	if err := s.db.QueryRow("SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM log_lines WHERE session_id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fileSizes is the database file and its WAL, in bytes.
func fileSizes(p string) int64 {
	var n int64
	for _, f := range []string{p, p + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestLogByteCap: a session flooding long lines keeps no more than the
// byte cap of text, the newest lines in order; the oldest go first, in
// batches, and FirstLogSeq then says lines were dropped. Another
// session's lines stay. The database file, and its WAL, stay near the
// cap however much was written, and a reopened store goes on from the
// stored count.
func TestLogByteCap(t *testing.T) {
	p := dbPath(t)
	s := openStore(t, p)
	s.logs.max = 1 << 20
	ctx := context.Background()
	proj, x := seed(t, s)
	if err := s.CreateSession(ctx, Session{ID: "quiet", ProjectID: proj.ID, State: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, "quiet", []LogLine{{Stream: "stdout", Text: "quiet"}}); err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstLogSeq(ctx, "quiet"); err != nil || first != 1 {
		t.Errorf("FirstLogSeq of a whole log: %d, %v; want 1", first, err)
	}
	before := fileSizes(p)
	long := strings.Repeat("L", 60<<10)
	const batches, per = 200, 10 // 117 MiB of text, 117 times the cap
	seq := 0
	for range batches {
		lines := make([]LogLine, per)
		for i := range lines {
			seq++
			lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: fmt.Sprintf("%08d %s", seq, long)}
		}
		if err := s.AppendLogs(ctx, x.ID, lines); err != nil {
			t.Fatal(err)
		}
		if n := storedText(t, s, x.ID); n > s.logs.max {
			t.Fatalf("after line %d the session stores %d bytes of text, past the cap %d", seq, n, s.logs.max)
		}
	}
	n := storedText(t, s, x.ID)
	if n < s.logs.max/2 {
		t.Errorf("the session keeps %d bytes of text; want at least half the cap %d (trimmed in batches, not all at once)", n, s.logs.max)
	}
	all := mustLogs(t, s, x.ID)
	for i, l := range all {
		if want := fmt.Sprintf("%08d ", int(all[0].Seq)+i); !strings.HasPrefix(l.Text, want) || l.Seq != all[0].Seq+int64(i) {
			t.Fatalf("kept line %d is %d %.12q: want the newest lines in order", i, l.Seq, l.Text)
		}
	}
	if last := all[len(all)-1].Seq; last != int64(seq) {
		t.Errorf("the newest line kept is %d, want %d", last, seq)
	}
	first, err := s.FirstLogSeq(ctx, x.ID)
	if err != nil || first != all[0].Seq || first <= 1 {
		t.Errorf("FirstLogSeq: %d, %v; want %d, above 1", first, err, all[0].Seq)
	}
	if l := mustLogs(t, s, "quiet"); len(l) != 1 {
		t.Errorf("another session lost lines to this one's cap: %d of 1 left", len(l))
	}
	grew := fileSizes(p) - before
	t.Logf("%d MiB of text written: %d bytes kept, the database and its WAL grew by %d KiB", batches*per*len(long)>>20, n, grew>>10)
	if grew > 8*s.logs.max {
		t.Errorf("the database and its WAL grew by %d bytes for a cap of %d", grew, s.logs.max)
	}

	// One batch larger than the cap keeps its newest lines.
	huge := make([]LogLine, 40)
	for i := range huge {
		huge[i] = LogLine{Stream: "stdout", Text: fmt.Sprintf("huge %02d %s", i, long)}
	}
	if err := s.AppendLogs(ctx, x.ID, huge); err != nil {
		t.Fatal(err)
	}
	all = mustLogs(t, s, x.ID)
	if n := storedText(t, s, x.ID); n > s.logs.max || !strings.HasPrefix(all[len(all)-1].Text, "huge 39 ") || strings.HasPrefix(all[0].Text, "huge 00 ") {
		t.Errorf("a batch of %d bytes: %d bytes stored, from %.8q to %.8q; want at most %d, its newest lines", 40*len(long), n, all[0].Text, all[len(all)-1].Text, s.logs.max)
	}

	// A store opened again counts what is stored.
	s.Close()
	s2 := openStore(t, p)
	s2.logs.max = 1 << 20
	if err := s2.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: long}, {Stream: "stdout", Text: long}}); err != nil {
		t.Fatal(err)
	}
	if n := storedText(t, s2, x.ID); n > s2.logs.max {
		t.Errorf("after reopening, %d bytes stored, past the cap %d", n, s2.logs.max)
	}
}
