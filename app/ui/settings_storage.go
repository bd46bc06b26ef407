package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

func (w *settingsWindow) storageTab() fyne.CanvasObject {
	w.storageList = widget.NewList(
		func() int { return len(w.storage) },
		func() fyne.CanvasObject {
			label := widget.NewLabel("")
			label.Truncation = fyne.TextTruncateEllipsis
			state := widget.NewLabel("")
			size := widget.NewLabel("")
			return container.New(columns{4, 1.4, 1.2}, label, state, size)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(w.storage) {
				return
			}
			r := w.storage[i]
			objs := o.(*fyne.Container).Objects
			objs[0].(*widget.Label).SetText(r.label)
			objs[1].(*widget.Label).SetText(r.state)
			objs[2].(*widget.Label).SetText(doctor.HumanBytes(r.bytes))
		})
	w.storageTotal = widget.NewLabel("Reading what the sessions take…")
	w.cleanup = widget.NewButtonWithIcon("Clean up stopped sessions", theme.DeleteIcon(), w.confirmCleanup)
	refresh := widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), w.loadStorage)
	w.storageStatus = statusLabel()
	top := note("What each session takes on disk: its clone's own files and its scratch disk (what is written, not its size).")
	bottom := container.NewVBox(container.NewHBox(w.storageTotal, layout.NewSpacer(), refresh, w.cleanup), w.storageStatus)
	w.trash = newTrashPanel(w)
	w.envStorage = newEnvStoragePanel(w)
	lower := container.NewVSplit(w.envStorage.box, w.trash.box)
	split := container.NewVSplit(w.storageList, lower)
	split.Offset = 0.4
	return container.NewBorder(top, bottom, nil, nil, split)
}

// tabStorage is the Storage tab's title.
const tabStorage = "Storage"

// storageShown reads the disk use again when the Storage tab is the one
// showing: sessions come and go while the window is open or hidden, and
// a person should not have to press refresh to see them.
func (w *settingsWindow) storageShown() {
	if sel := w.tabs.Selected(); sel != nil && sel.Text == tabStorage {
		w.loadStorage()
	}
}

// ended reports whether a session in state s is over and may be cleaned
// up (interrupted ones can still be restarted and are kept).
func ended(state string) bool {
	return store.State(state) == session.StateStopped || store.State(state) == session.StateFailed
}

func (w *settingsWindow) loadStorage() {
	w.trash.load()
	w.envStorage.load()
	w.u.background(func(ctx context.Context) {
		usage, err := w.u.Backend.DiskUsage(ctx)
		sessions, lerr := w.u.Backend.List(ctx)
		projects, _ := w.u.Backend.Projects(ctx)
		err = errors.Join(err, lerr)
		rows := storageRows(usage, sessions, projects)
		w.u.post(func() {
			w.storage = rows
			w.storageList.Refresh()
			var total int64
			n := 0
			for _, r := range rows {
				total += r.bytes
				if ended(r.state) {
					n++
				}
			}
			w.storageTotal.SetText(fmt.Sprintf("%s in %d %s", doctor.HumanBytes(total), len(rows), pluralWord(len(rows), "session", "sessions")))
			if n == 0 {
				w.cleanup.Disable()
			} else {
				w.cleanup.Enable()
			}
			if err != nil {
				setStatus(w.storageStatus, widget.DangerImportance, sentence(err.Error()))
			}
		})
	})
}

// storageRows joins disk usage with the sessions, biggest first.
func storageRows(usage map[string]int64, sessions []store.Session, projects []store.Project) []storageRow {
	names := map[int64]string{}
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	var rows []storageRow
	seen := map[string]bool{}
	for _, s := range sessions {
		seen[s.ID] = true
		rows = append(rows, storageRow{id: s.ID, label: session.Title(s) + " · " + names[s.ProjectID], state: string(s.State), bytes: usage[s.ID]})
	}
	for id, n := range usage {
		if !seen[id] {
			rows = append(rows, storageRow{id: id, label: id + " (no session record)", state: "orphaned", bytes: n})
		}
	}
	slices.SortStableFunc(rows, func(a, b storageRow) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return rows
}

func (w *settingsWindow) confirmCleanup() {
	var ids []string
	for _, r := range w.storage {
		if ended(r.state) {
			ids = append(ids, r.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	d := dialog.NewConfirm(fmt.Sprintf("Delete %d stopped sessions?", len(ids)),
		fmt.Sprintf("They go to the trash, where they are kept for %s. Sessions with work not merged into their repository are kept here.", trashKeepWords()),
		func(ok bool) {
			if ok {
				w.cleanUp(ids)
			}
		}, w.win)
	d.SetConfirmText("Delete")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}

// cleanUp removes sessions without force; the backend refuses those
// whose work is not merged, and the status line says which.
func (w *settingsWindow) cleanUp(ids []string) {
	w.cleanup.Disable()
	setStatus(w.storageStatus, widget.MediumImportance, "Cleaning up…")
	w.u.background(func(ctx context.Context) {
		removed := 0
		var kept, failed []string
		for _, id := range ids {
			err := w.u.Backend.Remove(ctx, id, false)
			var dirty *workspace.DirtyError
			switch {
			case err == nil:
				removed++
			case errors.As(err, &dirty):
				kept = append(kept, shortID(id))
			default:
				failed = append(failed, shortID(id)+": "+err.Error())
			}
		}
		w.u.post(func() {
			msg := fmt.Sprintf("Deleted %d of %d stopped sessions.", removed, len(ids))
			imp := widget.SuccessImportance
			if len(kept) > 0 {
				msg += fmt.Sprintf(" Kept %s: unmerged work (merge it, or delete it from its session window).", strings.Join(kept, ", "))
				imp = widget.WarningImportance
			}
			if len(failed) > 0 {
				msg += " Could not delete " + strings.Join(failed, "; ") + "."
				imp = widget.DangerImportance
			}
			setStatus(w.storageStatus, imp, msg)
			w.loadStorage()
		})
	})
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
