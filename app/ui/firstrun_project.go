package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/store"
)

// firstRunPoll is how often Welcome asks whether a project was added
// elsewhere (the Sandbar window, `sandbar project add`): the backend
// sends no event for projects, and one read of the store is cheap.
const firstRunPoll = time.Second

// newReady makes what takes the drop zone's place once a project
// exists: which projects are ready, and New Session.
func (w *firstRunWindow) newReady() {
	w.readyText = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.readyText.Importance = widget.SuccessImportance
	w.readyText.Wrapping = fyne.TextWrapWord
	w.readyHint = note("")
	w.ready = container.NewVBox(w.readyText, w.readyHint)
	w.ready.Hide()
	w.newSess = widget.NewButtonWithIcon("New Session…", theme.ContentAddIcon(), func() {
		var id int64
		if len(w.projects) > 0 {
			id = w.projects[0].ID
		}
		w.u.ShowNewSession(id)
	})
	w.newSess.Importance = widget.HighImportance
	w.newSess.Hide()
}

// setProjects shows the drop zone while there is no project, and the way
// on once there is one (most recently used first, as the backend lists
// them).
func (w *firstRunWindow) setProjects(ps []store.Project) {
	w.projects = ps
	if len(ps) == 0 {
		w.ready.Hide()
		w.newSess.Hide()
		w.drop.Show()
		w.open.Importance = widget.HighImportance
		w.open.Refresh()
		return
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if len(ps) == 1 {
		w.readyText.SetText(ps[0].Name + " is ready.")
	} else {
		w.readyText.SetText(fmt.Sprintf("%d projects are ready: %s.", len(ps), strings.Join(names, ", ")))
	}
	w.projectHint()
	w.drop.Hide()
	w.ready.Show()
	w.newSess.Show()
	w.open.Importance = widget.MediumImportance
	w.open.Refresh()
}

// projectHint says what is left to do once a project exists: the key,
// or only to start.
func (w *firstRunWindow) projectHint() {
	const how = "Claude Code works on its own clone of the repository, in its own VM. To add another repository, drop its folder here."
	if w.key.saved == "" {
		w.readyHint.SetText("Add your Anthropic key above, then start a session. " + how)
	} else {
		w.readyHint.SetText("Press New Session to start an agent on it. " + how)
	}
}

// watchProjects reads the projects now and each firstRunPoll until ctx
// ends, and hands them to the window when they change.
func (w *firstRunWindow) watchProjects(ctx context.Context) {
	tick := time.NewTicker(firstRunPoll)
	defer tick.Stop()
	var last []int64
	first := true
	for {
		if ps, err := w.u.Backend.Projects(ctx); err == nil {
			ids := make([]int64, len(ps))
			for i, p := range ps {
				ids[i] = p.ID
			}
			if first || !slices.Equal(ids, last) {
				first, last = false, ids
				w.u.post(func() { w.setProjects(ps) })
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkDetails is a check's raw findings, folded away under Details and
// selectable, for a bug report or a search.
func checkDetails(detail string) fyne.CanvasObject {
	l := widget.NewLabel(detail)
	l.Wrapping = fyne.TextWrapWord
	l.Selectable = true
	l.SizeName = theme.SizeNameCaptionText
	return widget.NewAccordion(widget.NewAccordionItem("Details", l))
}
