package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

// queued is what subscriber s holds now: events and their estimated bytes.
func queued(s *subscriber) (events, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.queue {
		bytes += eventSize(ev)
	}
	return len(s.queue), bytes
}

// TestHubBoundsASlowSubscriber: a subscriber that reads nothing while a
// chatty agent writes 50,000 lines of 1 KiB (or 2,000 of 64 KiB, which
// reach the bound in bytes first) holds at most the queue's bound, the
// publisher never waits for it, and once it reads it sees the
// lines it got, one event saying how many it missed, and the state
// change and turn end published after the flood (those are kept, never
// dropped). Another session's subscriber is not affected.
func TestHubBoundsASlowSubscriber(t *testing.T) {
	for _, tt := range []struct {
		name        string
		lines, size int
	}{
		{"many short lines", 50000, 1 << 10},
		{"long lines", 2000, 64 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) { testSlowSubscriber(t, tt.lines, tt.size) })
	}
}

func testSlowSubscriber(t *testing.T, lines, size int) {
	h := newHub()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := h.subscribe(ctx, "")
	other := h.subscribe(ctx, "other")
	var sub *subscriber
	h.mu.Lock()
	for s := range h.subs {
		if s.session == "" {
			sub = s
		}
	}
	h.mu.Unlock()

	text := strings.Repeat("x", size)
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range lines {
			h.publish(Event{Session: "chatty", Kind: EventLog, Log: &store.LogLine{Seq: int64(i + 1), Text: text}})
		}
		h.publish(Event{Session: "chatty", Kind: EventTurn, Turn: &Turn{Code: 1}})
		h.publish(Event{Session: "chatty", Kind: EventState, State: StateStopped})
		h.publish(Event{Session: "other", Kind: EventState, State: StateRunning})
	}()
	select {
	case <-published:
	case <-time.After(30 * time.Second):
		t.Fatalf("publishing %d lines took over 30 s: the publisher waits for a subscriber that reads nothing", lines)
	}
	n, b := queued(sub)
	// Beyond the bound: the EventDropped, the turn and the two state changes.
	if n > maxQueueEvents+4 || b > maxQueueBytes+2*eventSize(Event{Log: &store.LogLine{Text: text}}) {
		t.Errorf("the slow subscriber holds %d events, %d bytes; want at most %d events, %d bytes", n, b, maxQueueEvents, maxQueueBytes)
	}

	got, dropped, stopped, turn := 0, 0, false, false
	last := int64(0)
	for !stopped {
		select {
		case ev := <-slow:
			switch ev.Kind {
			case EventLog:
				if ev.Log.Seq <= last {
					t.Fatalf("line %d after line %d", ev.Log.Seq, last)
				}
				last = ev.Log.Seq
				got++
			case EventDropped:
				if ev.Dropped <= 0 {
					t.Errorf("a dropped event says %d were dropped", ev.Dropped)
				}
				dropped += ev.Dropped
			case EventTurn:
				turn = ev.Turn != nil && ev.Turn.Code == 1
			case EventState:
				if ev.Session == "chatty" {
					stopped = true
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("after %d lines and %d dropped, the state change published last never came", got, dropped)
		}
	}
	if !turn {
		t.Error("the turn's end, published after the flood, was dropped")
	}
	if got+dropped != lines || dropped == 0 {
		t.Errorf("got %d lines and %d dropped, of %d: want every line either delivered or counted as dropped, and some dropped", got, dropped, lines)
	}
	select {
	case ev := <-other:
		if ev.Session != "other" || ev.Kind != EventState {
			t.Errorf("the other session's subscriber got %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other session's subscriber got nothing")
	}
}
