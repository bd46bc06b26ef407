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
// icons, as the project rows' are: words would leave the title no room
// in a window of 760 points.
type rowActions struct {
	mw                     *mainWindow
	id                     func() string
	open, stop, merge, del *widget.Button
	box                    *fyne.Container
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
	a.open = widget.NewButtonWithIcon("", rowActionIcon("Open"), func() { mw.openSession(a.id()) })
	a.stop = widget.NewButtonWithIcon("", rowActionIcon("Stop"), func() { mw.stopSession(a.id()) })
	a.merge = widget.NewButtonWithIcon("", rowActionIcon("Merge"), func() { mw.mergeSession(a.id()) })
	a.del = widget.NewButtonWithIcon("", rowActionIcon("Delete"), func() { mw.deleteSession(a.id()) })
	for _, b := range []*widget.Button{a.open, a.stop, a.merge, a.del} {
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
	}{{"Open", a.open}, {"Stop", a.stop}, {"Merge", a.merge}, {"Delete", a.del}}
}

// set enables the actions that fit the session as c shows it.
func (a *rowActions) set(c sessionCells) {
	setEnabled(a.stop, c.canStop)
	setEnabled(a.merge, c.canMerge)
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
		mw.u.OpenSession(id)
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
			if err != nil {
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
		"Its VM stops and it moves to the trash, with its log and transcript, for "+trashKeepWords()+": Undo or Settings → Storage bring it back. If it holds work that is not in your repository, Sandbar asks again.",
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
				mw.confirmForce(id, title, dirtyMessage(dirty))
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
