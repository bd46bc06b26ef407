package ui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/secrets"
)

// eachSeen calls f on each object a person can see in o, leaving out
// whatever is hidden or sits inside something hidden (a folded
// disclosure, a step's spare form). It walks the renderers the window
// draws with, so it changes nothing of what is drawn (test.LaidOutObjects
// makes new ones, which later changes no longer reach).
func eachSeen(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	if o == nil || !o.Visible() {
		return
	}
	f(o)
	switch c := o.(type) {
	case fyne.Widget:
		for _, child := range test.WidgetRenderer(c).Objects() {
			eachSeen(child, f)
		}
	case *fyne.Container:
		for _, child := range c.Objects {
			eachSeen(child, f)
		}
	}
}

// seenTexts are the texts of the labels, buttons, links, entries and
// rich text a person can see in o.
func seenTexts(o fyne.CanvasObject) []string {
	var out []string
	eachSeen(o, func(o fyne.CanvasObject) {
		switch w := o.(type) {
		case *widget.Label:
			out = append(out, w.Text)
		case *widget.Button:
			out = append(out, w.Text)
		case *widget.Entry:
			out = append(out, w.Text)
		case *widget.RichText:
			out = append(out, w.String())
		case *widget.Hyperlink:
			out = append(out, w.Text)
		}
	})
	return out
}

// sees reports whether a person can see s in w.
func sees(w fyne.Window, s string) bool {
	return slices.ContainsFunc(seenTexts(w.Canvas().Content()), func(x string) bool { return strings.Contains(x, s) })
}

// tapButton taps the button labelled text that a person sees in w.
func tapButton(t *testing.T, w fyne.Window, text string) {
	t.Helper()
	var found *widget.Button
	eachSeen(w.Canvas().Content(), func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == text && found == nil {
			found = b
		}
	})
	if found == nil {
		t.Fatalf("no %q button; the window shows %q", text, seenTexts(w.Canvas().Content()))
	}
	test.Tap(found)
}

// keyPrefs is the real Prefs whose SetSecret records the names it was
// given, and fails with fail when set.
type keyPrefs struct {
	*Prefs
	mu    sync.Mutex
	names []string
	fail  error
}

func (p *keyPrefs) SetSecret(ctx context.Context, name, value string) error {
	p.mu.Lock()
	p.names = append(p.names, name)
	fail := p.fail
	p.mu.Unlock()
	if fail != nil {
		return fail
	}
	return p.Prefs.SetSecret(ctx, name, value)
}

func (p *keyPrefs) DoctorChecks(context.Context) []doctor.Check { return nil }

// firstRun opens Welcome over s and waits for its key step to read the
// keyring.
func (h *appHarness) firstRun(t *testing.T, s SettingsBackend) *firstRunWindow {
	t.Helper()
	h.u.Settings = s
	h.u.ShowFirstRun()
	w := h.u.firstRunWin
	w.win.Resize(fyne.NewSize(640, 1000))
	h.q.WaitFor(t, 5*time.Second, "Welcome's first look at the projects", func() bool { return w.projects != nil || w.drop.Visible() })
	return w
}

// TestFirstRunKeyStep: Welcome asks for the Anthropic key with the field
// right there, stores it in the keyring as ANTHROPIC_API_KEY, never shows
// it back, and marks the step done, now and when Welcome opens again.
func TestFirstRunKeyStep(t *testing.T) {
	h := newAppHarness(t)
	kp := &keyPrefs{Prefs: h.prefs}
	w := h.firstRun(t, kp)
	k := w.key
	for _, want := range []string{"Add your Anthropic key", "Create a key at console.anthropic.com", "Save key"} {
		if !sees(w.win, want) {
			t.Errorf("Welcome does not show %q; it shows %q", want, seenTexts(w.win.Canvas().Content()))
		}
	}
	if !k.save.Disabled() || k.mark.Text != "" {
		t.Fatalf("with nothing typed: Save enabled %v, mark %q; want Save disabled and no mark", !k.save.Disabled(), k.mark.Text)
	}

	// A paste that is not one key is refused before it reaches the keyring.
	test.Type(k.entry, "sk-ant-one sk-ant-two")
	if !k.save.Disabled() || !sees(w.win, "paste just the key") {
		t.Errorf("two words: Save enabled %v, status %q", !k.save.Disabled(), k.status.Text)
	}
	retype(k.entry, "")

	// The keyring refusing says why, and keeps the value out of it.
	const key = "sk-ant-api03-welcome-0123456789abcdef"
	kp.fail = errors.New("set ANTHROPIC_API_KEY: the Secret Service keyring is locked: unlock it and try again")
	test.Type(k.entry, key+"\n") // a paste brings its line break along
	if k.save.Disabled() {
		t.Fatalf("a key with a trailing line break is refused: %q", k.status.Text)
	}
	test.Tap(k.save)
	h.q.WaitFor(t, 5*time.Second, "the keyring's refusal shown", func() bool { return sees(w.win, "keyring is locked: unlock it") })
	if k.saved != "" || k.mark.Text != "" {
		t.Error("the step is marked done though the keyring refused the key")
	}

	kp.fail = nil
	test.Tap(k.save)
	h.q.WaitFor(t, 5*time.Second, "the key saved and the step marked done", func() bool { return k.saved == secrets.AnthropicAPIKey })
	if v, ok := h.secrets.get(secrets.AnthropicAPIKey); !ok || v != key {
		t.Errorf("the keyring holds %q (%v), want the key typed, trimmed", v, ok)
	}
	if kp.names[len(kp.names)-1] != secrets.AnthropicAPIKey {
		t.Errorf("SetSecret was called with %q", kp.names)
	}
	for _, want := range []string{"Done", "Your Anthropic key is saved in the " + keyringName, "Replace…"} {
		if !sees(w.win, want) {
			t.Errorf("after saving, Welcome does not show %q", want)
		}
	}
	if sees(w.win, "Save key") {
		t.Error("the key's field is still there after saving")
	}
	for _, s := range seenTexts(w.win.Canvas().Content()) {
		if strings.Contains(s, "welcome-0123456789") {
			t.Errorf("Welcome shows the key back: %q", s)
		}
	}
	if k.entry.Text != "" {
		t.Error("the field still holds the key")
	}

	// Replace brings the field back, empty.
	tapButton(t, w.win, "Replace…")
	if !sees(w.win, "Save key") || k.entry.Text != "" {
		t.Errorf("Replace: the field is shown %v, holds %d bytes", sees(w.win, "Save key"), len(k.entry.Text))
	}

	// Opened again, Welcome knows the key from the keyring.
	w.win.Close()
	w = h.firstRun(t, kp)
	h.q.WaitFor(t, 5*time.Second, "the step marked done from the keyring", func() bool { return w.key.saved == secrets.AnthropicAPIKey })
	if !sees(w.win, "Your Anthropic key is saved") || sees(w.win, "Save key") {
		t.Errorf("reopened, Welcome shows %q", seenTexts(w.win.Canvas().Content()))
	}
}

// TestFirstRunHypervisorPlain: the hypervisor's problem is one plain
// sentence; QEMU's own words wait behind Details until opened.
func TestFirstRunHypervisorPlain(t *testing.T) {
	h := newAppHarness(t)
	const raw = "qemu: KVM trial boot failed: qemu-system-x86_64: ../accel/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed."
	cp := &checkedPrefs{Prefs: h.prefs, built: true, checks: []doctor.Check{
		{Name: "hypervisor", OK: true, Warn: true, Summary: "KVM is not usable here — sessions run about 10× slower under emulation.",
			Detail: raw, Fix: "sessions still work, only slower"},
		{Name: "git", OK: true, Detail: "git version 2.39.5"},
	}}
	w := h.firstRun(t, cp)
	h.q.WaitFor(t, 5*time.Second, "the checklist", func() bool { return len(w.checks) == 2 })

	for _, want := range []string{"KVM is not usable here — sessions run about 10× slower under emulation.", "Fix: sessions still work, only slower", "Details", "git version 2.39.5"} {
		if !sees(w.win, want) {
			t.Errorf("Welcome does not show %q", want)
		}
	}
	if sees(w.win, "kvm_buf_set_msrs") {
		t.Error("QEMU's assertion is shown before Details is opened")
	}
	tapButton(t, w.win, "Details")
	if !sees(w.win, "kvm.c:3183: kvm_buf_set_msrs: Assertion") {
		t.Errorf("opened, Details does not show QEMU's words; Welcome shows %q", seenTexts(w.win.Canvas().Content()))
	}
}

// TestFirstRunOnceProjectExists: Welcome stops inviting a drop once a
// project exists, however it was added, and offers New Session instead.
func TestFirstRunOnceProjectExists(t *testing.T) {
	h := newAppHarness(t)
	w := h.firstRun(t, &keyPrefs{Prefs: h.prefs})
	if !sees(w.win, "Drop a repository folder here") || sees(w.win, "New Session…") {
		t.Fatal("with no project, Welcome does not invite a drop")
	}

	// Added elsewhere (the CLI, the Sandbar window): Welcome sees it.
	p := h.addProject(t, "tinyshop")
	h.q.WaitFor(t, 5*time.Second, "Welcome changed for the project", func() bool { return sees(w.win, "tinyshop is ready.") })
	if sees(w.win, "Drop a repository folder here") {
		t.Error("Welcome still says \"Drop a repository folder here\" with a project")
	}
	if !sees(w.win, "Add your Anthropic key above, then start a session") {
		t.Errorf("without a key, Welcome does not say it is the step left; it shows %q", seenTexts(w.win.Canvas().Content()))
	}

	// The key saved, only Start is left.
	test.Type(w.key.entry, "sk-ant-api03-ready")
	test.Tap(w.key.save)
	h.q.WaitFor(t, 5*time.Second, "the hint changed for the key", func() bool { return sees(w.win, "Press New Session to start an agent on it") })

	tapButton(t, w.win, "New Session…")
	ns := h.u.newSessWin
	if ns == nil {
		t.Fatal("New Session… opened no New Session window")
	}
	h.q.WaitFor(t, 5*time.Second, "New Session's load", func() bool { return ns.loaded })
	if got, _ := ns.selected(); got.ID != p.ID {
		t.Errorf("New Session chose %q, want tinyshop", got.Name)
	}
}
