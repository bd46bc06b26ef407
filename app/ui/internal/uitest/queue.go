// Package uitest is what the windows' and widgets' tests share: a queue
// that stands in for fyne.Do, so that widgets are touched by one
// goroutine, the test's, as they are by the app's UI goroutine.
//
// It is not part of the app: only tests import it (internal keeps it to
// app/ui and below).
package uitest

import (
	"sync"
	"testing"
	"time"
)

// Queue stands in for fyne.Do: goroutines Post to it and the test
// goroutine, the UI goroutine here, runs what they posted while it waits
// (Drain, WaitFor). So widgets are touched by one goroutine, as in the
// app, and -race checks that.
type Queue struct {
	mu    sync.Mutex
	fns   []func()
	posts int
	wake  chan struct{}
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{wake: make(chan struct{}, 1)} }

// Post queues f for the UI goroutine (fyne.Do's place).
func (q *Queue) Post(f func()) {
	q.mu.Lock()
	q.fns = append(q.fns, f)
	q.posts++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Posts is how many functions have been posted so far.
func (q *Queue) Posts() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.posts
}

// Wake receives once something is posted (a later post may share it).
func (q *Queue) Wake() <-chan struct{} { return q.wake }

// Drain runs what was posted, and what that posts, until nothing is left.
func (q *Queue) Drain() {
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

// pollEvery is how often WaitFor asks again of a condition outside the
// UI (the store, git), which posts nothing when it changes.
const pollEvery = 10 * time.Millisecond

// WaitFor runs the UI until cond holds, or fails the test after d saying
// what did not happen.
func (q *Queue) WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		q.Drain()
		if cond() {
			return
		}
		select {
		case <-q.wake:
		case <-poll.C:
		case <-deadline.C:
			q.Drain()
			if cond() {
				return
			}
			t.Fatalf("after %s: %s did not happen", d, what)
		}
	}
}
