package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

// BenchmarkChattyAgent: events from an agent printing as fast as it can,
// through the real supervisor (in process) and the manager, to a
// subscriber and the store; every line must arrive, in order.
func BenchmarkChattyAgent(b *testing.B) {
	benchChatty(b, 200000) // one run of fixed size, whatever b.N is
}

func benchChatty(b *testing.B, lines int) {
	f := newFixture(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := f.m.Subscribe(ctx, "")
	start := time.Now()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512,
		Agent: AgentSpec{Command: "sh", Args: []string{"-c", fmt.Sprintf("seq 1 %d", lines)}}})
	if err != nil {
		b.Fatal(err)
	}
	next, done := 1, false
	for !done {
		select {
		case ev := <-events:
			if ev.Session != s.ID {
				continue
			}
			if ev.Kind == EventLog && ev.Log.Stream == "stdout" {
				if ev.Log.Text != fmt.Sprint(next) {
					b.Fatalf("line %d: got %q", next, ev.Log.Text)
				}
				next++
			}
			if ev.Kind == EventState && !Live(ev.State) {
				done = true
			}
		case <-time.After(2 * time.Minute):
			b.Fatalf("stuck after %d lines", next-1)
		}
	}
	took := time.Since(start)
	if next-1 != lines {
		b.Fatalf("subscriber got %d of %d lines", next-1, lines)
	}
	// The store keeps the newest window of lines; agent.log keeps all.
	stored, _ := f.m.Logs(ctx, s.ID, 0, lines+100)
	if len(stored) != min(lines+4, store.DefaultLogWindow) && len(stored) < min(lines, store.DefaultLogWindow) {
		b.Fatalf("store has %d lines", len(stored))
	}
	last := ""
	for _, l := range stored {
		if l.Stream == "stdout" {
			last = l.Text
		}
	}
	if last != fmt.Sprint(lines) {
		b.Fatalf("the store's last line is %q, want %d", last, lines)
	}
	logData, _ := os.ReadFile(f.paths.SessionDir(s.ID).AgentLog())
	if n := strings.Count(string(logData), " stdout "); n != lines {
		b.Fatalf("agent.log has %d of %d lines", n, lines)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(lines)/took.Seconds(), "lines/s")
	fmt.Printf("chatty agent → subscriber and store: %d lines in %s, %.0f lines/s, none lost\n", lines, took.Round(time.Millisecond), float64(lines)/took.Seconds())
}
