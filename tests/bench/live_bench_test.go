//go:build linux

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"sandbar/app/session"
)

// BenchmarkLiveOutput: a tool of the agent's in the guest writes a line
// to its output file (cat, the agent's child, copies each message into
// /tmp/live.output); the figure is the time from the message sent to
// that line in the host's live output stream (EventLive). It bounds
// from above the time from the byte written in the guest to the host:
// it adds the message's way into the guest, which no guest clock is
// needed to measure.
func BenchmarkLiveOutput(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := emptyRepo(b, root)
	m, _ := e.manager(b, root)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 1024, DiskGiB: 1, NoNetwork: true,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", "echo ready; cat > /tmp/live.output; echo bye"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Remove(context.Background(), s.ID, true)
	events := m.Subscribe(ctx, s.ID)
	waitFor := func(what string, ok func(session.Event) bool) time.Time { return waitEvent(b, ctx, events, what, ok) }
	waitFor("ready", func(ev session.Event) bool { return ev.Kind == session.EventLog && ev.Log.Text == "ready" })
	lat := &series{Metric: "byte written by a tool in the guest → host live output (upper bound: message sent → live line)", Key: "live-output", Unit: "ms"}
	for i := 0; i < max(e.runs, 9); i++ {
		text := fmt.Sprintf("live-%d", i)
		sent := time.Now()
		if err := m.Chat(ctx, s.ID, text); err != nil {
			b.Fatal(err)
		}
		got := waitFor("the line "+text+" live", func(ev session.Event) bool {
			return ev.Kind == session.EventLive && ev.Live != nil && slices.Contains(ev.Live.Lines, text)
		})
		lat.add(ms(got.Sub(sent)))
	}
	e.report(b, lat)
}
