package ui

import (
	"context"
	"errors"
	"fmt"
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// rowActions are the buttons at the end of a session's row in the
// Sandbar window: Open, Stop, Merge and Delete, for the session the row
// shows now (id: a list reuses its rows for other sessions). They are
// icons: words beside state, changes, age, uptime, CPU and memory would
// leave the title no room at 1280 points. Fyne 2.8 has no tooltips, so
// each says what it does in the row's second line while the pointer is
// over it (hintButton). They are always there, enabled or not, so that
// none moves when the state changes (TestSessionRowButtonsStayPut).
type rowActions struct {
	mw                     *mainWindow
	id                     func() string
	open, stop, merge, del *hintButton
	box                    *fyne.Container
}

// rowActionHints say what each action does, beside its icon.
var rowActionHints = map[string]string{
	"Open":   "Open: show this session's window",
	"Stop":   "Stop: the agent gets a few seconds to finish, then the VM shuts down",
	"Merge":  "Merge: create its branch in your repository, in its window",
	"Delete": "Delete: move it to the trash (Undo brings it back)",
}

// rowActionIcon is an action's icon, by its name. (A function: the
// theme is there to ask only once the app runs.)
func rowActionIcon(name string) fyne.Resource {
	switch name {
	case "Open":
		return theme.VisibilityIcon()
	case "Stop":
		return theme.MediaStopIcon()
	case "Merge":
		return theme.MailForwardIcon()
	}
	return theme.DeleteIcon()
}

func newRowActions(mw *mainWindow, id func() string) *rowActions {
	a := &rowActions{mw: mw, id: id}
	button := func(name string, do func(string)) *hintButton {
		return newHintButton(rowActionHints[name], rowActionIcon(name), func() { do(a.id()) })
	}
	a.open = button("Open", mw.openSession)
	a.stop = button("Stop", mw.stopSession)
	a.merge = button("Merge", mw.mergeSession)
	a.del = button("Delete", mw.deleteSession)
	for _, b := range []*hintButton{a.open, a.stop, a.merge, a.del} {
		b.Importance = widget.LowImportance
	}
	a.box = container.NewHBox(vcenter(a.open), vcenter(a.stop), vcenter(a.merge), vcenter(a.del))
	return a
}

// named are the actions with their names, in the order shown.
func (a *rowActions) named() []struct {
	name string
	btn  *widget.Button
} {
	return []struct {
		name string
		btn  *widget.Button
	}{{"Open", &a.open.Button}, {"Stop", &a.stop.Button}, {"Merge", &a.merge.Button}, {"Delete", &a.del.Button}}
}

// showHints has the actions say what they do through show (see
// hintButton).
func (a *rowActions) showHints(show func(string)) {
	for _, b := range []*hintButton{a.open, a.stop, a.merge, a.del} {
		b.show = show
	}
}

// set enables the actions that fit the session as c shows it.
func (a *rowActions) set(c sessionCells) {
	setEnabled(&a.stop.Button, c.canStop)
	setEnabled(&a.merge.Button, c.canMerge)
}

// rowActionsFor says whether a session can be stopped and merged now:
// stopped while it has a VM and is not stopping already; merged once its
// clone exists (as the session window's Merge).
func rowActionsFor(s store.Session) (canStop, canMerge bool) {
	return session.Live(s.State) && s.State != session.StateStopping, s.State != session.StateProvisioning
}

// withRowActions lays a row's columns out with its actions at the end.
// The header passes nil and gets a blank of the actions' width, so that
// its columns line up with the rows'.
func withRowActions(cols fyne.CanvasObject, a *rowActions) fyne.CanvasObject {
	var end fyne.CanvasObject
	if a != nil {
		end = a.box
	} else {
		blank := canvas.NewRectangle(color.Transparent)
		blank.SetMinSize(fyne.NewSize(newRowActions(nil, nil).box.MinSize().Width, 0))
		end = blank
	}
	return container.NewBorder(nil, nil, nil, end, cols)
}

// rowDetail is a row's second line: where the session works, then why
// it is in its state.
func rowDetail(c sessionCells) string {
	d := c.project + " · " + c.branch
	if c.detail != "" {
		d += " — " + c.detail
	}
	return d
}

// titleOf is the title the window shows for session id.
func (mw *mainWindow) titleOf(id string) string {
	if r := mw.byID[id]; r != nil {
		return session.Title(r.s)
	}
	return "the session"
}

func (mw *mainWindow) openSession(id string) {
	if id != "" && mw.u.OpenSession != nil {
		mw.u.openSession(id)
	}
}

// stopSession stops a session; its row follows the state events, and a
// failure is said in the banner.
func (mw *mainWindow) stopSession(id string) {
	if id == "" {
		return
	}
	title := mw.titleOf(id)
	mw.banner.show(bannerInfo, fmt.Sprintf("Stopping “%s”: the agent gets a few seconds to finish, then the VM shuts down…", title))
	mw.u.background(func(ctx context.Context) {
		_, err := mw.u.Backend.Stop(ctx, id)
		mw.u.post(func() {
			switch {
			case errors.Is(err, session.ErrNotSaved):
				mw.banner.show(bannerError, fmt.Sprintf("Stopped “%s”, but %s", title, sentence(err.Error())))
				return
			case err != nil:
				mw.banner.show(bannerError, fmt.Sprintf("Could not stop “%s”: %s", title, sentence(err.Error())))
				return
			}
			mw.banner.show(bannerInfo, fmt.Sprintf("Stopped “%s”.", title))
		})
	})
}

// mergeSession merges in the session's window, where what the merge did
// is said and a branch that diverged can be overwritten.
func (mw *mainWindow) mergeSession(id string) {
	if id == "" {
		return
	}
	mw.u.ShowSession(id)
	if w := mw.u.sessionWins[id]; w != nil {
		w.doMerge(session.MergeOptions{})
	}
}

// deleteSession asks, then deletes; a session holding work that is not
// in the repository is refused first, with the work listed and Delete
// anyway offered.
func (mw *mainWindow) deleteSession(id string) {
	if id == "" {
		return
	}
	title := mw.titleOf(id)
	d := dialog.NewConfirm(fmt.Sprintf("Delete “%s”?", title),
		"Its VM stops and it moves to the trash, with its log and transcript, for "+trashKeepWords()+": Undo or Settings › Storage bring it back. If it holds work that is not in your repository, Sandbar asks again.",
		func(ok bool) {
			if ok {
				mw.removeSession(id, title, false)
			}
		}, mw.win)
	d.SetConfirmText("Delete")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}

func (mw *mainWindow) removeSession(id, title string, force bool) {
	mw.u.background(func(ctx context.Context) {
		err := mw.u.Backend.Remove(ctx, id, force)
		mw.u.post(func() {
			var dirty *workspace.DirtyError
			switch {
			case err == nil:
				mw.showDeleted(id, title)
				mw.reload()
			case errors.As(err, &dirty):
				mw.confirmForce(id, title, dirtyMessage(dirty, mw.u.Home))
			case errors.Is(err, session.ErrDirty):
				mw.confirmForce(id, title, sentence(err.Error()))
			default:
				mw.banner.show(bannerError, fmt.Sprintf("Could not delete “%s”: %s", title, sentence(err.Error())))
			}
		})
	})
}

// confirmForce offers to delete a session and the work it would lose.
func (mw *mainWindow) confirmForce(id, title, why string) {
	d := dialog.NewConfirm(fmt.Sprintf("Delete “%s” and its work?", title), why, func(ok bool) {
		if ok {
			mw.removeSession(id, title, true)
		}
	}, mw.win)
	d.SetConfirmText("Delete anyway")
	d.SetDismissText("Keep it")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}
