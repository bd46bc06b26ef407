package widget

import (
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
)

// swQueue stands in for fyne.Do in these tests: goroutines post to it
// and the test goroutine, which is the UI goroutine here, runs what they
// posted while it waits. So widgets are touched by one goroutine, as in
// the app, and -race checks it.
type swQueue struct {
	mu   sync.Mutex
	fns  []func()
	wake chan struct{}
}

func newSWQueue() *swQueue { return &swQueue{wake: make(chan struct{}, 1)} }

func (q *swQueue) post(f func()) {
	q.mu.Lock()
	q.fns = append(q.fns, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain runs what was posted, and what that posts, until nothing is left.
func (q *swQueue) drain() {
	for {
		q.mu.Lock()
		fns := q.fns
		q.fns = nil
		q.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, f := range fns {
			f()
		}
	}
}

// waitFor runs the UI until cond holds, or fails the test after d saying
// what did not happen.
func (q *swQueue) waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		q.drain()
		if cond() {
			return
		}
		select {
		case <-q.wake:
		case <-deadline.C:
			q.drain()
			if cond() {
				return
			}
			t.Fatalf("after %s: %s did not happen", d, what)
		}
	}
}

// logHas reports whether v shows a line containing s.
func logHas(v *LogView, s string) bool {
	for _, l := range v.Lines() {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// pressEnter presses Enter in e.
func pressEnter(e interface{ TypedKey(*fyne.KeyEvent) }) {
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}
