package ui

import (
	"context"
	"fmt"
	"time"

	"sandbar/app/session"
)

// events loads what the session has so far, then follows its events.
func (w *sessionWindow) events(ctx context.Context) {
	ch := w.u.Backend.Subscribe(ctx, w.id)
	subscribed := time.Now()
	// What happened before the subscription: the state now, the stored
	// log, the transcript and the changes.
	if s, err := w.u.Backend.Get(ctx, w.id); err == nil {
		w.ui(func() { w.applySession(s) })
	}
	feed := &logFeed{w: w}
	feed.load(ctx)
	entries, err := w.u.Backend.Transcript(ctx, w.id)
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.Time.Before(subscribed.Add(-time.Second)) {
			seen[entryKey(e)] = true
		}
	}
	if err == nil && len(entries) > 0 {
		w.ui(func() { w.transcript.SetEntries(transcriptEntries(entries)) })
	}
	w.changes.reload(ctx)
	w.net.reload(ctx)

	catchUp := time.NewTimer(logCatchUpEvery)
	defer catchUp.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-catchUp.C:
			if !feed.catchUp(ctx) {
				catchUp.Reset(logCatchUpEvery)
			}
		case ev, ok := <-ch:
			if !ok {
				return
			}
			switch ev.Kind {
			case session.EventLog:
				if ev.Log != nil {
					feed.live(*ev.Log)
				}
			case session.EventTranscript:
				if ev.Entry == nil {
					continue
				}
				if len(seen) > 0 && seen[entryKey(*ev.Entry)] {
					delete(seen, entryKey(*ev.Entry))
					continue
				}
				e := transcriptEntry(*ev.Entry)
				w.ui(func() { w.transcript.Add(e) })
			case session.EventState, session.EventTitle:
				s, err := w.u.Backend.Get(ctx, w.id)
				if err != nil {
					continue
				}
				w.ui(func() { w.applySession(s) })
			case session.EventStats:
				if ev.Stats != nil {
					st, at := *ev.Stats, ev.Time
					w.ui(func() { w.res.addStats(at, st) })
				}
			case session.EventChanges:
				if ev.Changes != nil {
					c := *ev.Changes
					w.ui(func() { w.changes.set(c) })
				}
			case session.EventNet, session.EventPorts, session.EventDropped:
				w.net.event(ev)
			case session.EventLive:
				if ev.Live != nil {
					l := *ev.Live
					w.ui(func() { w.logTab.setLive(l) })
				}
			case session.EventRemoved:
				w.ui(w.removed)
			}
		}
	}
}

// entryKey identifies a transcript entry, to drop live events that the
// transcript read at start already had.
func entryKey(e session.Entry) string {
	return fmt.Sprintf("%s|%d|%s|%d", e.Kind, e.Time.UnixNano(), e.ToolID, len(e.Text))
}

// clock keeps the uptime current, and what the merge actions would do.
func (w *sessionWindow) clock(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.ui(func() {
				w.showUptime()
				if w.sess.State == session.StateRunning {
					w.transcript.Tick(time.Now())
				} else {
					w.transcript.EndTools()
				}
			})
			// The repository moves on its own (a commit, a branch made
			// or deleted there): what the merge actions would do is
			// read again now and then, as no event says so.
			if n%mergeRefreshTicks == 0 {
				w.refreshMerge(ctx)
			}
		}
	}
}

// mergeRefreshTicks is how many seconds apart the window reads again
// what its merge actions would do (a few git commands, on the host).
const mergeRefreshTicks = 5
