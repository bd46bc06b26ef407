package ui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
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
	poll := time.NewTicker(20 * time.Millisecond) // for conditions outside the UI (the store, git)
	defer poll.Stop()
	for {
		q.drain()
		if cond() {
			return
		}
		select {
		case <-q.wake:
		case <-poll.C:
		case <-deadline.C:
			q.drain()
			if cond() {
				return
			}
			t.Fatalf("after %s: %s did not happen", d, what)
		}
	}
}

// swHarness is one test's Sandbar UI over a real session.Manager (real
// SQLite, git and guest supervisor; only the VM is in-process).
type swHarness struct {
	env *sessiontest.Env
	u   *UI
	q   *swQueue
}

func newSWHarness(t *testing.T) *swHarness {
	t.Helper()
	a := test.NewTempApp(t)
	env := sessiontest.New(t)
	u := New(a, env.Manager, nil)
	q := newSWQueue()
	u.post = q.post
	t.Cleanup(func() {
		for _, w := range append([]fyne.Window(nil), a.Driver().AllWindows()...) {
			w.Close()
		}
		u.Close()
	})
	return &swHarness{env: env, u: u, q: q}
}

// start starts a session of a custom agent on a new repository.
func (h *swHarness) start(t *testing.T, script string) (store.Session, string) {
	t.Helper()
	repo := h.env.Repo(t, "demo")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Agent: sessiontest.Shell(script)})
	if err != nil {
		t.Fatal(err)
	}
	return s, repo
}

// open shows the session's window.
func (h *swHarness) open(t *testing.T, id string) *sessionWindow {
	t.Helper()
	w := h.u.showSession(id)
	if w == nil {
		t.Fatalf("no window for session %s", id)
	}
	w.win.Resize(fyne.NewSize(1000, 700))
	return w
}

// logHas reports whether a line of v contains s.
func logHas(v *sbwidget.LogView, s string) bool {
	for _, l := range v.Lines() {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// hasLine reports whether v holds the line s.
func hasLine(v *sbwidget.LogView, s string) bool {
	for _, l := range v.Lines() {
		if l == s {
			return true
		}
	}
	return false
}

// pressEnter presses Enter in e.
func pressEnter(e interface{ TypedKey(*fyne.KeyEvent) }) {
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}
