package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/net/policy"
	"sandbar/app/session"
)

// tabNetwork names the Network tab of Settings, Project Settings and a
// session's window.
const tabNetwork = "Network"

// rulesHelp is the line under a rules editor: the syntax, with examples.
const rulesHelp = "A rule a line: allow HOST[:PORTS][/tcp|udp] or deny …, port 443 if none; host NAME ADDRESS maps a name; # comments. " +
	"E.g. allow api.example.com · allow *.example.com:8000-8999 · allow ntp.example.com:123/udp · deny *:25"

// rulesPlaceHolder is what the empty rules box says: a hint in words,
// which no one could take for a rule already there.
const rulesPlaceHolder = "No rules of your own yet: sessions reach only the default allowlist. Type a rule a line here."

// modeChoice is one entry of a rules editor's mode select: the mode line
// it writes ("" writes none).
type modeChoice struct {
	label string
	mode  policy.Mode
}

// modeWords says what a mode lets a session reach.
func modeWords(m policy.Mode) string {
	switch m {
	case policy.ModeOpen:
		return "Open: any public host; this machine's loopback and private networks stay closed unless a rule names them."
	case policy.ModeOff:
		return "Off: no network card at all."
	}
	return "Allowlist: only the hosts the rules allow (a default allowlist for the agent's needs, plus these rules)."
}

// modeName is a mode as a word for a person.
func modeName(m policy.Mode) string {
	switch m {
	case policy.ModeOpen:
		return "Open"
	case policy.ModeOff:
		return "Off"
	}
	return "Allowlist"
}

// textMode is the mode line of a rule text; "" when it has none or does
// not parse.
func textMode(text string, src policy.Source) policy.Mode {
	f, err := policy.Parse([]byte(text), src)
	if err != nil {
		return ""
	}
	return f.Mode
}

// withMode returns text with its mode line replaced by one for m, at the
// top, or taken out when m is "".
func withMode(text string, m policy.Mode) string {
	var kept []string
	for _, l := range strings.Split(text, "\n") {
		code, _, _ := strings.Cut(l, "#")
		if f := strings.Fields(code); len(f) > 0 && strings.EqualFold(f[0], "mode") {
			continue
		}
		kept = append(kept, l)
	}
	out := strings.Join(kept, "\n")
	if m == "" {
		return strings.TrimLeft(out, "\n")
	}
	if strings.TrimSpace(out) == "" {
		return "mode " + string(m) + "\n"
	}
	return "mode " + string(m) + "\n" + out
}

// rulesProblem says why a rule text was refused: each bad line, as
// policy.Parse names it.
func rulesProblem(err error) string {
	var lines []string
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case *policy.LineError:
			lines = append(lines, sentence(u.Error()))
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	walk(err)
	if len(lines) == 0 {
		return "Not saved: " + sentence(err.Error())
	}
	const shown = 5
	if len(lines) > shown {
		lines = append(lines[:shown], fmt.Sprintf("And %d more.", len(lines)-shown))
	}
	return "Not saved, nothing changed:\n" + strings.Join(lines, "\n")
}

// firstBadLine is the number of the first line err names, 0 if none.
func firstBadLine(err error) int {
	var le *policy.LineError
	if errors.As(err, &le) {
		return le.Line
	}
	return 0
}

// rulesEditor edits one scope's network rules, Sandbar's or a project's:
// a mode select kept in step with the text's mode line, the text, and
// Save, which the backend validates (a bad line is shown, and nothing is
// saved). Its fields belong to the UI goroutine.
type rulesEditor struct {
	u         *UI
	scope     session.NetScope
	ref       string // the project, for ScopeProject
	projectID int64
	src       policy.Source

	choices []modeChoice
	mode    *widget.Select
	hint    *widget.Label
	text    *entry
	save    *widget.Button
	status  *widget.Label
	content fyne.CanvasObject

	// defaults shows the default allowlist, in win.
	defaults *widget.Button
	win      fyne.Window

	saved   string // the text as last loaded or saved
	loaded  bool
	syncing bool // the select or the text is being set by the other
	// inherited is the mode without a mode line here: Sandbar's, for a
	// project; allowlist for Sandbar.
	inherited policy.Mode
}

func newRulesEditor(u *UI, scope session.NetScope, ref string, projectID int64) *rulesEditor {
	e := &rulesEditor{u: u, scope: scope, ref: ref, projectID: projectID, src: policy.SourceSandbar, inherited: policy.ModeAllowlist}
	if scope == session.ScopeProject {
		e.src = policy.SourceProject
	}
	e.mode = widget.NewSelect(nil, func(string) { e.modeChosen() })
	e.hint = note("")
	e.text = newMultiLineEntry()
	e.text.TextStyle.Monospace = true
	e.text.SetPlaceHolder(rulesPlaceHolder)
	e.text.SetMinRowsVisible(4)
	e.text.OnChanged = func(string) { e.edited() }
	// Enter is a new rule; Ctrl+Enter (Cmd+Enter) saves.
	e.text.OnSubmitted = func(string) {
		if !e.save.Disabled() {
			e.doSave()
		}
	}
	e.text.Disable() // until loaded
	e.save = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), e.doSave)
	e.save.Importance = widget.HighImportance
	e.save.Disable()
	e.status = statusLabel()
	e.setChoices()
	modeRow := container.New(layout.NewFormLayout(), widget.NewLabel("Mode"), e.mode)
	e.defaults = widget.NewButtonWithIcon("Default allowlist…", theme.ListIcon(), e.showDefaults)
	e.defaults.Importance = widget.LowImportance
	top := container.NewVBox(modeRow, e.hint, container.NewBorder(nil, nil, nil, e.defaults, heading("Rules")), note(rulesHelp))
	bottom := container.NewVBox(container.NewHBox(layout.NewSpacer(), e.save), e.status)
	e.content = container.NewBorder(top, bottom, nil, nil, e.text)
	return e
}

// setChoices fills the mode select: a project may leave the mode to
// Sandbar's settings.
func (e *rulesEditor) setChoices() {
	e.choices = nil
	if e.scope == session.ScopeProject {
		e.choices = append(e.choices, modeChoice{label: "As Sandbar's settings (" + strings.ToLower(modeName(e.inherited)) + ")"})
		e.choices = append(e.choices, modeChoice{label: "Allowlist", mode: policy.ModeAllowlist})
	} else {
		e.choices = append(e.choices, modeChoice{label: "Allowlist (default)"})
	}
	e.choices = append(e.choices, modeChoice{label: "Open", mode: policy.ModeOpen}, modeChoice{label: "Off", mode: policy.ModeOff})
	var labels []string
	for _, c := range e.choices {
		labels = append(labels, c.label)
	}
	e.mode.SetOptions(labels)
}

// load reads the rules (and, for a project, Sandbar's mode) off the UI
// goroutine.
func (e *rulesEditor) load() {
	e.u.background(func(ctx context.Context) {
		text, err := e.u.Backend.NetworkRules(ctx, e.scope, e.ref)
		inherited := policy.ModeAllowlist
		if err == nil && e.scope == session.ScopeProject {
			if st, serr := e.u.Backend.NetworkRules(ctx, session.ScopeSandbar, ""); serr == nil {
				if m := textMode(st, policy.SourceSandbar); m != "" {
					inherited = m
				}
			}
		}
		e.u.post(func() {
			if err != nil {
				setStatus(e.status, widget.DangerImportance, "Cannot read the network rules: "+sentence(err.Error()))
				return
			}
			e.inherited = inherited
			e.setChoices()
			e.loaded = true
			e.saved = text
			e.text.Enable()
			e.syncing = true
			e.text.SetText(text)
			e.syncing = false
			e.edited()
		})
	})
}

// choice is the select's entry for mode m ("": no mode line).
func (e *rulesEditor) choice(m policy.Mode) int {
	for i, c := range e.choices {
		if c.mode == m {
			return i
		}
	}
	return 0
}

// modeChosen writes the chosen mode into the text.
func (e *rulesEditor) modeChosen() {
	if e.syncing || !e.loaded {
		return
	}
	i := e.mode.SelectedIndex()
	if i < 0 {
		return
	}
	m := e.choices[i].mode
	e.syncing = true
	e.text.SetText(withMode(e.text.Text, m))
	e.syncing = false
	e.edited()
}

// edited follows the text: the select shows its mode line, Save is on
// while it differs from what is saved.
func (e *rulesEditor) edited() {
	if !e.loaded {
		return
	}
	m, ok := policy.Mode(""), true
	if f, err := policy.Parse([]byte(e.text.Text), e.src); err == nil {
		m = f.Mode
	} else {
		ok = false
	}
	if ok {
		i := e.choice(m)
		if e.mode.SelectedIndex() != i {
			was := e.syncing
			e.syncing = true
			e.mode.SetSelectedIndex(i)
			e.syncing = was
		}
		if m == "" {
			m = e.inherited
		}
		e.hint.SetText(modeWords(m))
	}
	setEnabled(e.save, e.text.Text != e.saved)
	if e.status.Importance == widget.SuccessImportance && e.text.Text != e.saved {
		setStatus(e.status, widget.MediumImportance, "")
	}
}

// doSave hands the text to the backend, which checks every line.
func (e *rulesEditor) doSave() {
	text := e.text.Text
	e.save.Disable()
	e.u.background(func(ctx context.Context) {
		err := e.u.Backend.SetNetworkRules(ctx, e.scope, e.ref, text, e.projectID)
		e.u.post(func() {
			if err != nil {
				setStatus(e.status, widget.DangerImportance, rulesProblem(err))
				if n := firstBadLine(err); n > 0 {
					e.text.CursorRow, e.text.CursorColumn = n-1, 0
					e.text.Refresh()
				}
				setEnabled(e.save, e.text.Text != e.saved)
				return
			}
			e.saved = text
			who := "every session follows"
			if e.scope == session.ScopeProject {
				who = "this project's sessions follow"
			}
			setStatus(e.status, widget.SuccessImportance, "Saved: "+who+" these rules from their next connection, running ones too.")
			e.edited()
		})
	})
}

// showDefaults shows the default allowlist: what a session in Allowlist
// mode reaches with no rule of the person's.
func (e *rulesEditor) showDefaults() {
	if e.win == nil {
		return
	}
	list := widget.NewLabel(policy.DefaultText())
	list.TextStyle.Monospace = true
	list.Selectable = true
	scroll := container.NewVScroll(list)
	scroll.SetMinSize(fyne.NewSize(440, 360))
	content := container.NewBorder(note("In Allowlist mode every session reaches these hosts, besides your rules. "+
		"\"read\" lets only downloads through; \"allow HOST write\" in your rules lets pushes through too. "+
		"A line \"defaults off\" in your rules leaves this list out."), nil, nil, nil, scroll)
	d := dialog.NewCustom("The default allowlist", "Close", content, e.win)
	d.Show()
}
