package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/workspace"
)

// confirmSteering asks before Merge into brings files that steer tools on
// the person's machine (workspace.ErrSteering): the dialog names each,
// with what it steers and a button that shows its diff in the Changes tab,
// and says which will need the person's trust again. Merge anyway merges
// with them accepted; Cancel changes nothing (the refused merge did not).
func (w *sessionWindow) confirmSteering(refusal error) {
	files := workspace.SteeringIn(w.changes.files)
	rows := container.NewVBox()
	for _, f := range files {
		fc := w.changeFor(f.Path)
		name := widget.NewLabelWithStyle(displayLine(f.Path), fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		why := widget.NewLabel(f.Status + ": " + f.Why)
		why.Wrapping = fyne.TextWrapWord
		diff := widget.NewButtonWithIcon("Diff", theme.SearchIcon(), func() {
			for _, t := range w.tabs.Items {
				if t.Text == tabChanges {
					w.tabs.Select(t)
				}
			}
			w.changes.selectFile(fc, false)
		})
		rows.Add(container.NewBorder(nil, nil, name, diff, why))
		if f.NeedsTrust {
			trust := widget.NewLabel(fmt.Sprintf("This changes %s, which will need your trust again before Sandbar uses it.", displayLine(f.Path)))
			trust.Importance = widget.WarningImportance
			trust.Wrapping = fyne.TextWrapWord
			rows.Add(trust)
		}
	}
	intro := widget.NewLabel("The session's work changes files that steer tools on your machine (git, your shell, editor, package managers, CI or Sandbar itself). Look at each before it reaches your working tree; creating the branch instead leaves your working tree untouched.")
	intro.Wrapping = fyne.TextWrapWord
	content := container.NewVBox(intro, rows)
	if len(files) == 0 {
		// The Changes tab has not read them yet: the refusal names them.
		msg := widget.NewLabel(displayLine(w.tildeRepo(refusal.Error())))
		msg.Wrapping = fyne.TextWrapWord
		content.Add(msg)
	}
	d := dialog.NewCustomConfirm("Merge files that steer your tools?", "Merge anyway", "Cancel", container.NewVScroll(content), func(ok bool) {
		if ok {
			w.doMerge(session.MergeOptions{Into: true, AcceptSteering: true, Stash: w.mergeStash})
		} else {
			w.notice.show(widget.WarningImportance, "Not merged: the session's work changes files that steer your tools. Your working tree is as it was.")
		}
	}, w.win)
	d.Resize(fyne.NewSize(640, 420))
	d.Show()
}

// changeFor is the changed file at p as the Changes tab lists it, or one
// made from p alone.
func (w *sessionWindow) changeFor(p string) workspace.FileChange {
	for _, f := range w.changes.files {
		if f.Path == p {
			return f
		}
	}
	return workspace.FileChange{Path: p, Status: "modified"}
}
