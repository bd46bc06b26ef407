package ui

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/imagebuild"
	"sandbar/app/secrets"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/ui/internal/uitest"
)

// appHarness is one test's Sandbar UI over a real session.Manager (real
// SQLite, git and guest supervisor; only the VM is in-process) and real
// Prefs over the same store. Only the keyring is a map (fakeSecrets): the
// real one is tested in app/secrets and tests/keyringtest.
type appHarness struct {
	env     *sessiontest.Env
	u       *UI
	q       *uitest.Queue
	prefs   *Prefs
	secrets *fakeSecrets
}

func newAppHarness(t *testing.T) *appHarness {
	t.Helper()
	a := test.NewTempApp(t)
	env := sessiontest.New(t)
	sec := &fakeSecrets{values: map[string]string{}, names: env.Store}
	prefs := &Prefs{Store: env.Store, Secrets: sec, Images: &imagebuild.Builder{Paths: env.Paths},
		AutostartDir: filepath.Join(t.TempDir(), "autostart"), Executable: "/opt/Sandbar Apps/sandbar"}
	h := &appHarness{env: env, q: uitest.NewQueue(), prefs: prefs, secrets: sec}
	h.u = New(a, env.Manager, prefs)
	h.u.post = h.q.Post
	t.Cleanup(func() {
		// Closing a window takes it out of the slice AllWindows returns.
		for _, w := range slices.Clone(a.Driver().AllWindows()) {
			w.Close()
		}
		h.u.Close()
	})
	return h
}

// mainWindow opens the Sandbar window and waits for its first load.
func (h *appHarness) mainWindow(t *testing.T) *mainWindow {
	t.Helper()
	h.u.ShowMain()
	mw := h.u.mainWin
	h.q.WaitFor(t, 5*time.Second, "the Sandbar window's first load", func() bool { return mw.loaded })
	return mw
}

// addProject adds a repository as a project through the backend.
func (h *appHarness) addProject(t *testing.T, name string) store.Project {
	t.Helper()
	p, _, err := h.env.Manager.AddProject(context.Background(), h.env.Repo(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// texts are the texts of every label, button and entry drawn in o.
func texts(o fyne.CanvasObject) []string {
	var out []string
	for _, x := range test.LaidOutObjects(o) {
		if !x.Visible() {
			continue
		}
		switch w := x.(type) {
		case *widget.Label:
			out = append(out, w.Text)
		case *widget.Button:
			out = append(out, w.Text)
		case *widget.Entry:
			out = append(out, w.Text)
		case *widget.RichText:
			out = append(out, w.String())
		}
	}
	return out
}

// shows reports whether some text drawn in w contains s.
func shows(w fyne.Window, s string) bool {
	return slices.ContainsFunc(texts(w.Canvas().Content()), func(x string) bool { return strings.Contains(x, s) })
}

// overlayButton finds the button labelled text in the window's topmost
// overlay (a dialog).
func overlayButton(t *testing.T, w fyne.Window, text string) *widget.Button {
	t.Helper()
	top := w.Canvas().Overlays().Top()
	if top == nil {
		t.Fatalf("no dialog is shown (looking for %q)", text)
	}
	for _, x := range test.LaidOutObjects(top) {
		if b, ok := x.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	t.Fatalf("the dialog has no %q button; it shows %q", text, texts(top))
	return nil
}

// setSecret sets a secret as Settings does, and gives it to the
// Manager's agents too (sessiontest's map is their keyring).
func (h *appHarness) setSecret(t *testing.T, name, value string) {
	t.Helper()
	if err := h.prefs.SetSecret(context.Background(), name, value); err != nil {
		t.Fatal(err)
	}
	h.env.Secrets[name] = value
}

// fakeSecrets is a map standing in for the OS keyring in UI tests only;
// it records the names in the store, as secrets.Secrets does.
type fakeSecrets struct {
	mu     sync.Mutex
	values map[string]string
	names  secrets.NameStore
}

func (f *fakeSecrets) Names(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n []string
	for k := range f.values {
		n = append(n, k)
	}
	sort.Strings(n)
	return n, nil
}

func (f *fakeSecrets) Set(_ context.Context, name, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[name] = value
	return f.names.AddSecretName(context.Background(), name)
}

func (f *fakeSecrets) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.values[name]; !ok {
		return errors.New("no secret " + name)
	}
	delete(f.values, name)
	return f.names.RemoveSecretName(context.Background(), name)
}

func (f *fakeSecrets) get(name string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.values[name]
	return v, ok
}
