package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAppendLogs appends batches of 100 lines of 80 characters, as
// the session manager's flusher does, and reports lines/s: with the
// default window (nothing trimmed) and with a window of 1000 lines, where
// every batch also deletes the 100 oldest.
func BenchmarkAppendLogs(b *testing.B) {
	for _, window := range []int{DefaultLogWindow, 1000} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			s := openStore(b, dbPath(b))
			ctx := context.Background()
			_, x := seed(b, s)
			if err := s.SetSetting(ctx, SettingLogWindow, strconv.Itoa(window)); err != nil {
				b.Fatal(err)
			}
			lines := make([]LogLine, 100)
			text := strings.Repeat("x", 80)
			for b.Loop() {
				now := time.Now()
				for i := range lines {
					lines[i] = LogLine{Stream: "stdout", Time: now, Text: text}
				}
				if err := s.AppendLogs(ctx, x.ID, lines); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(lines))/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkOpen opens and closes an existing database, as every CLI
// command does: the check (with quick_check, the file being small), the
// pool's first connection and the version read.
func BenchmarkOpen(b *testing.B) {
	p := dbPath(b)
	s, err := Open(p)
	if err != nil {
		b.Fatal(err)
	}
	seed(b, s)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
