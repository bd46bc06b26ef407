package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	sbwidget "sandbar/app/ui/widget"
)

// TestFieldsHandOnCloseKeys: Esc and Ctrl+W (Cmd+W) close the window from
// the fields that swallowed them: Settings' secret value (a password
// field) and secret-name picker, Welcome's key field, and the Log tab's
// search field.
func TestFieldsHandOnCloseKeys(t *testing.T) {
	h := newAppHarness(t)
	type opened struct {
		win   fyne.Window
		field fyne.Focusable
	}
	fields := map[string]func() opened{
		"the secret value": func() opened {
			h.u.ShowSettings()
			return opened{h.u.settingsWin.win, h.u.settingsWin.secretValue}
		},
		"the secret name": func() opened {
			h.u.ShowSettings()
			return opened{h.u.settingsWin.win, h.u.settingsWin.secretName}
		},
		"Welcome's key": func() opened {
			h.u.ShowFirstRun()
			return opened{h.u.firstRunWin.win, h.u.firstRunWin.key.entry}
		},
	}
	for name, open := range fields {
		for _, how := range []string{"Esc", "Ctrl+W"} {
			o := open()
			o.win.Canvas().Focus(o.field)
			if o.win.Canvas().Focused() != o.field {
				t.Fatalf("%s: the field did not take focus", name)
			}
			if how == "Esc" {
				pressKey(o.win, fyne.KeyEscape)
			} else {
				pressShortcut(o.win, closeShortcut())
			}
			h.q.Drain()
			if isOpen(o.win) {
				t.Errorf("%s in %s leaves the window open", how, name)
				o.win.Close()
			}
		}
	}

	// Keys the fields do not close on are still theirs.
	h.u.ShowSettings()
	w := h.u.settingsWin
	w.win.Canvas().Focus(w.secretValue)
	test.Type(w.secretValue, "sk-x")
	pressKey(w.win, fyne.KeyBackspace)
	if w.secretValue.Text != "sk-" || !isOpen(w.win) {
		t.Errorf("Backspace in the secret value: %q, window open %v", w.secretValue.Text, isOpen(w.win))
	}
	w.win.Close()
}

// TestLogSearchHandsOnCloseKeys: the Log tab's search field closes the
// session window on Esc and Ctrl+W.
func TestLogSearchHandsOnCloseKeys(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	for _, how := range []string{"Esc", "Ctrl+W"} {
		w := h.open(t, s.ID)
		var search *sbwidget.Field
		for _, o := range test.LaidOutObjects(w.logs) {
			if f, ok := o.(*sbwidget.Field); ok {
				search = f
			}
		}
		if search == nil {
			t.Fatal("no search field in the Log tab")
		}
		w.win.Canvas().Focus(search)
		if how == "Esc" {
			pressKey(w.win, fyne.KeyEscape)
		} else {
			pressShortcut(w.win, closeShortcut())
		}
		if isOpen(w.win) || !w.closed {
			t.Errorf("%s in the log's search field leaves the session window open", how)
		}
	}
}
