package ui

import (
	"context"
	"time"

	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// The store gets a session's log lines in batches (every 200 ms), so a
// window opening sees the stored lines and then live ones, with perhaps
// a few in between that were published before it subscribed but not yet
// stored. It asks the store again a few times to fill that gap.
const (
	logCatchUpEvery = 250 * time.Millisecond
	logCatchUpMin   = 3  // asks, even when no gap shows
	logCatchUpMax   = 20 // asks before giving up on a gap
)

// logFeed joins the stored log and the live events into the log view,
// without a gap or a repeat.
type logFeed struct {
	w      *sessionWindow
	last   int64           // the newest line given to the view
	held   []store.LogLine // live lines held until the gap before them is filled
	tries  int
	joined bool // the gap is closed: live lines go straight in
}

// load gives the view what the store has (the view keeps the newest),
// page by page.
func (f *logFeed) load(ctx context.Context) {
	const page = 5000
	for {
		lines, err := f.w.u.Backend.Logs(ctx, f.w.id, f.last, page)
		if err != nil || len(lines) == 0 {
			return
		}
		if f.last == 0 && lines[0].Seq > 1 {
			// The store dropped the oldest lines (its caps).
			f.w.logTab.setTrimmed()
		}
		f.w.logTab.append(lines...)
		f.last = lines[len(lines)-1].Seq
		if len(lines) < page {
			return
		}
	}
}

func (f *logFeed) live(l store.LogLine) {
	switch {
	case l.Seq <= f.last:
	case f.joined || l.Seq == f.last+1 && len(f.held) == 0:
		f.w.logTab.append(l)
		f.last = l.Seq
	default:
		f.held = append(f.held, l)
		if len(f.held) >= sbwidget.DefaultLogCapacity {
			f.release()
		}
	}
}

// catchUp asks the store for lines after the last one shown, then shows
// the held live lines that follow on; it reports whether it is done.
func (f *logFeed) catchUp(ctx context.Context) bool {
	f.tries++
	f.load(ctx)
	i := 0
	for i < len(f.held) && f.held[i].Seq <= f.last {
		i++
	}
	f.held = f.held[i:]
	if len(f.held) > 0 && f.held[0].Seq == f.last+1 {
		f.release()
	}
	if len(f.held) == 0 && f.tries >= logCatchUpMin || f.tries >= logCatchUpMax {
		f.release()
		f.joined = true
		return true
	}
	return false
}

// release shows the held lines.
func (f *logFeed) release() {
	if len(f.held) == 0 {
		return
	}
	f.w.logTab.append(f.held...)
	f.last = f.held[len(f.held)-1].Seq
	f.held = nil
}
