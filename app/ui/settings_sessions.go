package ui

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// Settings keys of what becomes of running sessions (session/keep.go,
// session/autosuspend.go).
const (
	KeyKeepSessions = string(store.SettingKeepSessions)
	KeyAutoSuspend  = string(store.SettingAutoSuspend)
)

// The choices of what quitting does with running sessions, in the
// Settings window and the quit question, by policy.
var keepChoices = []struct {
	policy session.KeepPolicy
	label  string
}{
	{session.KeepStop, "Stop them (save their work; Restart starts the agent anew)"},
	{session.KeepResume, "Keep sessions (suspend them; they resume when Sandbar starts)"},
	{session.KeepSuspended, "Keep them suspended (each resumes when you open it or send it a message)"},
}

// autoSuspendChoices are the waits offered, as the setting's values.
var autoSuspendChoices = []struct{ value, label string }{
	{"off", "Never"},
	{"5", "After 5 minutes"},
	{"15", "After 15 minutes"},
	{"30", "After 30 minutes"},
	{"60", "After an hour"},
}

// sessionsSection is General's part on sessions that outlive the app or
// wait long: what quitting does with them, and when a waiting one is
// suspended.
type sessionsSection struct {
	w           *settingsWindow
	keep        *widget.RadioGroup
	autoSuspend *widget.Select
	status      *widget.Label
	loading     bool // the widgets are being set from the settings, not by a person
}

func (w *settingsWindow) sessionsSection() *sessionsSection {
	s := &sessionsSection{w: w, status: statusLabel()}
	labels := make([]string, len(keepChoices))
	for i, c := range keepChoices {
		labels[i] = c.label
	}
	s.keep = widget.NewRadioGroup(labels, func(label string) {
		for _, c := range keepChoices {
			if c.label == label && !s.loading {
				s.save(KeyKeepSessions, string(c.policy))
			}
		}
	})
	s.keep.Required = true
	var waits []string
	for _, c := range autoSuspendChoices {
		waits = append(waits, c.label)
	}
	s.autoSuspend = widget.NewSelect(waits, func(label string) {
		for _, c := range autoSuspendChoices {
			if c.label == label && !s.loading {
				s.save(KeyAutoSuspend, c.value)
			}
		}
	})
	return s
}

func (s *sessionsSection) content() fyne.CanvasObject {
	return container.NewVBox(
		widget.NewLabelWithStyle("When Sandbar quits with sessions running", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		s.keep,
		note("A kept session's VM is saved in its folder, memory and all: its agent goes on where it was, even after a restart of this computer. The same happens when this computer goes to sleep."),
		widget.NewLabelWithStyle("Suspend a session waiting for you", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		s.autoSuspend,
		note("A suspended session holds no memory and no CPU; opening it or sending it a message brings it back."),
		s.status,
	)
}

// load shows the settings as they are.
func (s *sessionsSection) load() {
	b := s.w.u.Settings
	if b == nil {
		return
	}
	s.w.u.background(func(ctx context.Context) {
		keep, _, _ := b.Setting(ctx, KeyKeepSessions)
		wait, _, _ := b.Setting(ctx, KeyAutoSuspend)
		s.w.u.post(func() {
			s.loading = true
			defer func() { s.loading = false }()
			policy := session.ParseKeepPolicy(keep)
			for _, c := range keepChoices {
				if c.policy == policy {
					s.keep.SetSelected(c.label)
				}
			}
			s.autoSuspend.SetSelected(autoSuspendLabel(wait))
		})
	})
}

// autoSuspendLabel is the choice a setting's value reads as; a value set
// elsewhere (the store, a test) that is no choice shows as it is.
func autoSuspendLabel(v string) string {
	d, err := session.ParseAutoSuspend(v)
	if err != nil {
		return ""
	}
	for _, c := range autoSuspendChoices {
		if cd, _ := session.ParseAutoSuspend(c.value); cd == d {
			return c.label
		}
	}
	return "After " + d.String()
}

func (s *sessionsSection) save(key, value string) {
	b := s.w.u.Settings
	if b == nil {
		return
	}
	s.w.u.background(func(ctx context.Context) {
		err := b.SetSetting(ctx, key, value)
		s.w.u.post(func() {
			if err != nil {
				setStatus(s.status, widget.DangerImportance, sentence(err.Error()))
				return
			}
			setStatus(s.status, widget.SuccessImportance, "Saved.")
		})
	})
}
