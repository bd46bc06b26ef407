package ui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

// projectSettingsWindow is one project's settings: which secrets its
// sessions get, and its network rules. It opens from the project's row
// in the Sandbar window and from a session's Network tab.
type projectSettingsWindow struct {
	u       *UI
	win     fyne.Window
	id      int64
	project store.Project
	tabs    *container.AppTabs

	// Secrets. names are the recorded secrets, sorted; chosen those
	// ticked; saved what the project lists now; gone what it lists that
	// is no longer set (saving drops them: the backend refuses an
	// unknown name).
	names         []string
	brokers       map[string]store.SecretBroker
	chosen        map[string]bool
	saved         []string
	gone          []string
	checks        map[string]*widget.Check
	secretRows    *fyne.Container
	secretsNote   *widget.Label
	secretsSave   *widget.Button
	secretsStatus *widget.Label
	loaded        bool

	rules *rulesEditor
	trust *trustPane
	env   *envPane
	// wantTrust and wantEnv open the Trust or Environment tab once it
	// is there.
	wantTrust bool
	wantEnv   bool
}

// ShowProjectSettings shows the settings of the project whose id is id.
func (u *UI) ShowProjectSettings(id int64) { u.showProjectSettings(id) }

func (u *UI) showProjectSettings(id int64) *projectSettingsWindow {
	if w := u.projectWins[id]; w != nil {
		w.win.Show()
		w.win.RequestFocus()
		return w
	}
	if u.projectWins == nil {
		u.projectWins = map[int64]*projectSettingsWindow{}
	}
	w := &projectSettingsWindow{u: u, id: id, win: u.App.NewWindow("Project Settings"), chosen: map[string]bool{}, checks: map[string]*widget.Check{}}
	u.projectWins[id] = w
	w.secretRows = container.NewVBox()
	w.secretsNote = note("")
	w.secretsNote.Hide()
	w.secretsSave = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), w.saveSecrets)
	w.secretsSave.Importance = widget.HighImportance
	w.secretsSave.Disable()
	w.secretsStatus = statusLabel()
	secretsTab := container.NewBorder(
		note("The secrets this project's sessions get. A brokered secret never enters the VM: it holds a stand-in, and Sandbar puts the value in requests to the secret's host alone. "+
			"Others enter the VM's environment. Sessions started from now on get what you save; add secrets in the Secrets tab of Settings."),
		container.NewVBox(w.secretsNote, container.NewHBox(layout.NewSpacer(), w.secretsSave), w.secretsStatus),
		nil, nil, container.NewVScroll(w.secretRows))
	w.tabs = container.NewAppTabs(container.NewTabItemWithIcon("Secrets", theme.AccountIcon(), secretsTab))
	w.win.SetContent(container.NewPadded(w.tabs))
	u.frameWindow(w.win, winProjectSettings, fyne.NewSize(640, 480))
	w.win.SetOnClosed(func() {
		if u.projectWins[id] == w {
			delete(u.projectWins, id)
		}
		if w.env != nil {
			w.env.stop()
		}
	})
	w.win.Show()
	w.load()
	return w
}

// load reads the project, then its secrets and rules.
func (w *projectSettingsWindow) load() {
	u := w.u
	u.background(func(ctx context.Context) {
		p, err := u.Backend.Project(ctx, w.id)
		var names, listed []string
		var brokers map[string]store.SecretBroker
		if err == nil {
			listed, err = u.Backend.ProjectSecrets(ctx, w.id)
		}
		if err == nil && u.Settings != nil {
			names, err = u.Settings.SecretNames(ctx)
			if err == nil {
				brokers, err = u.Settings.SecretBrokers(ctx)
			}
		}
		u.post(func() {
			if err != nil {
				setStatus(w.secretsStatus, widget.DangerImportance, "Cannot read the project's settings: "+sentence(err.Error()))
				return
			}
			w.project = p
			w.win.SetTitle("Project Settings — " + p.Name)
			if w.rules == nil {
				// The project's path names it unambiguously (an id could be
				// read as a session's).
				w.rules = newRulesEditor(u, session.ScopeProject, p.Path, p.ID)
				w.rules.win = w.win
				w.tabs.Append(container.NewTabItemWithIcon(tabNetwork, theme.UploadIcon(), container.NewBorder(
					note("Rules for every session of "+p.Name+", added to Sandbar's (the Network tab of Settings). A repository's .sandbar/network may add more, or narrow them."),
					nil, nil, nil, w.rules.content)))
				w.rules.load()
			}
			if w.trust == nil {
				w.trust = newTrustPane(u, p.Path, p.Name)
				w.tabs.Append(container.NewTabItemWithIcon(tabTrust, theme.ConfirmIcon(), w.trust.box))
				if w.wantTrust {
					w.tabs.SelectIndex(len(w.tabs.Items) - 1)
				}
			}
			w.trust.load()
			if w.env == nil {
				w.env = newEnvPane(u, p.Path, p.ID, func() { selectTabNamed(w.tabs, tabTrust) })
				w.tabs.Append(container.NewTabItemWithIcon(tabEnvironment, theme.ComputerIcon(), w.env.box))
				w.env.start()
				if w.wantEnv {
					selectTabNamed(w.tabs, tabEnvironment)
				}
			}
			w.setSecrets(names, brokers, listed)
		})
	})
}

// setSecrets shows a check per recorded secret: the model API's
// credentials always on, the others as the project lists them.
func (w *projectSettingsWindow) setSecrets(names []string, brokers map[string]store.SecretBroker, listed []string) {
	sort.Strings(names)
	w.names, w.brokers, w.saved = names, brokers, listed
	w.gone = nil
	clear(w.chosen)
	clear(w.checks)
	for _, n := range listed {
		if slices.Contains(names, n) {
			w.chosen[n] = true
		} else if !session.ModelCredential(n) {
			w.gone = append(w.gone, n)
		}
	}
	w.secretRows.RemoveAll()
	model := 0
	for _, n := range names {
		how := widget.NewLabel(secretHow(n, brokers))
		how.Importance = widget.LowImportance
		how.Truncation = fyne.TextTruncateEllipsis
		c := widget.NewCheck(n, nil)
		if session.ModelCredential(n) {
			model++
			c.SetChecked(true)
			c.Disable()
			how.SetText("always: brokered to the model API, never in the VM")
		} else {
			c.SetChecked(w.chosen[n])
			name := n
			c.OnChanged = func(on bool) {
				w.chosen[name] = on
				w.changed()
			}
		}
		w.checks[n] = c
		w.secretRows.Add(container.NewBorder(nil, nil, c, nil, how))
	}
	var notes []string
	if model == 0 {
		notes = append(notes, "No model API credential is set: Claude Code needs ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (the Secrets tab of Settings).")
	}
	if len(names) == model {
		notes = append(notes, "There are no other secrets to give: add them in the Secrets tab of Settings.")
	}
	if len(w.gone) > 0 {
		notes = append(notes, fmt.Sprintf("The project lists %s, no longer set: Save drops %s, or set %s again in the Secrets tab of Settings.",
			listSome(w.gone, 5), pluralWord(len(w.gone), "it", "them"), pluralWord(len(w.gone), "it", "them")))
	}
	w.secretsNote.SetText(strings.Join(notes, "\n"))
	if len(notes) > 0 {
		w.secretsNote.Show()
	} else {
		w.secretsNote.Hide()
	}
	w.loaded = w.u.Settings != nil
	if w.u.Settings == nil {
		setStatus(w.secretsStatus, widget.WarningImportance, "This Sandbar has no settings backend: the secrets cannot be listed.")
	}
	w.changed()
}

// choice is the secrets ticked, sorted, the model API's left out (they
// are always given).
func (w *projectSettingsWindow) choice() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(w.chosen)) {
		if w.chosen[n] && !session.ModelCredential(n) {
			out = append(out, n)
		}
	}
	return out
}

// changed turns Save on while the ticks differ from what is saved.
func (w *projectSettingsWindow) changed() {
	var saved []string
	for _, n := range w.saved {
		if !session.ModelCredential(n) {
			saved = append(saved, n)
		}
	}
	sort.Strings(saved)
	setEnabled(w.secretsSave, w.loaded && !slices.Equal(saved, w.choice()))
	if w.secretsStatus.Importance == widget.SuccessImportance {
		setStatus(w.secretsStatus, widget.MediumImportance, "")
	}
}

// saveSecrets hands the ticked names to the backend, which refuses a
// name that is not a recorded secret.
func (w *projectSettingsWindow) saveSecrets() {
	names := w.choice()
	w.secretsSave.Disable()
	ref := w.project.Path
	w.u.background(func(ctx context.Context) {
		err := w.u.Backend.SetProjectSecrets(ctx, ref, names)
		var listed []string
		if err == nil {
			listed, err = w.u.Backend.ProjectSecrets(ctx, w.id)
		}
		w.u.post(func() {
			if err != nil {
				setStatus(w.secretsStatus, widget.DangerImportance, "Not saved: "+sentence(err.Error()))
				w.changed()
				return
			}
			w.setSecrets(w.names, w.brokers, listed)
			what := "no secret but the model API's credential"
			if len(names) > 0 {
				what = strings.Join(names, ", ") + " and the model API's credential"
			}
			setStatus(w.secretsStatus, widget.SuccessImportance, "Saved: sessions of "+w.project.Name+" started from now on get "+what+".")
		})
	})
}
