package ui

import (
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/ui/internal/uitest"
	sbwidget "sandbar/app/ui/widget"
)

// swHarness is one test's Sandbar UI over a real session.Manager (real
// SQLite, git and guest supervisor; only the VM is in-process).
type swHarness struct {
	env *sessiontest.Env
	u   *UI
	q   *uitest.Queue
}

func newSWHarness(t *testing.T) *swHarness {
	t.Helper()
	a := test.NewTempApp(t)
	env := sessiontest.New(t)
	u := New(a, env.Manager, nil)
	q := uitest.NewQueue()
	u.post = q.Post
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
