package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
)

// ctrlEnter is Ctrl+Enter (Cmd+Enter on macOS) as the desktop driver
// delivers it.
var ctrlEnter = &desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierShortcutDefault}

// TestNewSessionPromptFocusedAndCtrlEnterStarts: New Session opens with
// the prompt focused, so the first keystrokes land in it; Enter is a new
// line of the prompt, and Ctrl+Enter starts the session, from the prompt
// or from a field that is no entry.
func TestNewSessionPromptFocusedAndCtrlEnterStarts(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "keys")
	w := h.newSession(t, p.ID)
	if got := w.win.Canvas().Focused(); got != w.prompt {
		t.Fatalf("New Session opens with %T focused, not the prompt", got)
	}
	test.Type(w.prompt, "first line")
	w.prompt.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	test.Type(w.prompt, "second line")
	if w.prompt.Text != "first line\nsecond line" || w.starting {
		t.Fatalf("Enter: prompt %q, starting %v; want a new line and no start", w.prompt.Text, w.starting)
	}
	if w.start.Disabled() {
		t.Fatalf("Start is disabled: %q", w.problems.Text)
	}

	// From a field that is not an entry, the window takes the shortcut.
	w.win.Canvas().Unfocus()
	pressShortcut(w.win, ctrlEnter)
	if !w.starting {
		t.Fatal("Ctrl+Enter with no entry focused did not start the session")
	}
	h.q.WaitFor(t, 30*time.Second, "the session started and the window closed", func() bool { return h.u.newSessWin == nil })

	// And from the prompt.
	w = h.newSession(t, p.ID)
	if got := w.win.Canvas().Focused(); got != w.prompt {
		t.Fatalf("New Session opens again with %T focused, not the prompt", got)
	}
	test.Type(w.prompt, "another")
	pressShortcut(w.win, ctrlEnter)
	if !w.starting {
		t.Fatal("Ctrl+Enter in the prompt did not start the session")
	}
}

// TestSettingsFirstFieldFocused: Settings opens on Secrets with the name
// of a secret to add focused.
func TestSettingsFirstFieldFocused(t *testing.T) {
	h := newAppHarness(t)
	h.u.ShowSettings()
	w := h.u.settingsWin
	if got := w.win.Canvas().Focused(); got != w.secretName {
		t.Fatalf("Settings opens with %T focused, not the secret's name", got)
	}
}

// TestRulesCtrlEnterSaves: in a network rules box, Enter is a new rule
// and Ctrl+Enter saves.
func TestRulesCtrlEnterSaves(t *testing.T) {
	e := newMultiLineEntry()
	saved := ""
	e.OnSubmitted = func(s string) { saved = s }
	w := test.NewTempWindow(t, e)
	w.Canvas().Focus(e)
	test.Type(e, "a.example")
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if saved != "" {
		t.Fatal("Enter submitted a multi-line entry")
	}
	pressShortcut(w, ctrlEnter)
	if saved != "a.example\n" {
		t.Fatalf("Ctrl+Enter submitted %q", saved)
	}
}
