package ui

import (
	"context"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/session"
	"sandbar/app/store"
)

// trashPanel is the Storage tab's trash: the deleted sessions, what they
// take, a Restore for each and Empty trash for all.
type trashPanel struct {
	w      *settingsWindow
	items  []trashItem
	list   *widget.List
	total  *widget.Label
	empty  *widget.Button
	status *widget.Label
	box    fyne.CanvasObject
}

// trashItem is one session in the trash, as the panel shows it.
type trashItem struct {
	id, label, when string
	bytes           int64
}

func newTrashPanel(w *settingsWindow) *trashPanel {
	p := &trashPanel{w: w}
	p.list = newStorageList(func() int { return len(p.items) }, columns{4, 2.4, 1.2}, "Restore", theme.ContentUndoIcon(), func(i int) storageListRow {
		it := p.items[i]
		return storageListRow{cells: []string{it.label, it.when}, bytes: it.bytes, tap: func() { p.restore(it.id, it.label) }}
	})
	p.total = widget.NewLabel("Trash")
	p.total.TextStyle = fyne.TextStyle{Bold: true}
	p.empty = widget.NewButtonWithIcon("Empty trash", theme.DeleteIcon(), p.confirmEmpty)
	p.empty.Disable()
	p.status = statusLabel()
	top := container.NewVBox(
		container.NewHBox(p.total, layout.NewSpacer(), p.empty),
		note(fmt.Sprintf("Deleted sessions stay here for %s, then go for good.", trashKeepWords())),
		p.status)
	p.box = container.NewBorder(top, nil, nil, nil, p.list)
	return p
}

// load reads the trash off the UI goroutine.
func (p *trashPanel) load() {
	u := p.w.u
	u.background(func(ctx context.Context) {
		ts, err := u.Backend.Trash(ctx)
		projects, _ := u.Backend.Projects(ctx)
		u.post(func() { p.set(ts, projects, err) })
	})
}

func (p *trashPanel) set(ts []session.Trashed, projects []store.Project, err error) {
	names := map[int64]string{}
	for _, pr := range projects {
		names[pr.ID] = pr.Name
	}
	now := time.Now()
	p.items = p.items[:0]
	var total int64
	for _, t := range ts {
		total += t.Bytes
		name := names[t.ProjectID]
		if name == "" {
			name = "project gone"
		}
		p.items = append(p.items, trashItem{
			id:    t.ID,
			label: session.Title(t.Session) + " · " + name,
			when:  "deleted " + humanDuration(now.Sub(t.Deleted)) + " ago",
			bytes: t.Bytes,
		})
	}
	p.list.Refresh()
	if len(ts) == 0 {
		p.total.SetText("Trash: empty")
		p.empty.Disable()
	} else {
		p.total.SetText(fmt.Sprintf("Trash: %d %s, %s", len(ts), pluralWord(len(ts), "session", "sessions"), doctor.HumanBytes(total)))
		p.empty.Enable()
	}
	if err != nil {
		setStatus(p.status, widget.DangerImportance, "Could not read the trash: "+sentence(err.Error()))
	}
}

// restore brings one session back, and rereads the tab.
func (p *trashPanel) restore(id, label string) {
	setStatus(p.status, widget.MediumImportance, fmt.Sprintf("Restoring “%s”…", label))
	p.w.u.restore(id, label, func(label string, err error) {
		if err != nil {
			setStatus(p.status, widget.DangerImportance, fmt.Sprintf("Could not restore “%s”: %s", label, sentence(err.Error())))
		} else {
			setStatus(p.status, widget.SuccessImportance, fmt.Sprintf("Restored “%s”.", label))
		}
		p.w.loadStorage()
	})
}

func (p *trashPanel) confirmEmpty() {
	n := len(p.items)
	if n == 0 {
		return
	}
	d := dialog.NewConfirm(fmt.Sprintf("Delete %d %s for good?", n, pluralWord(n, "session", "sessions")),
		"Their folders, logs, transcripts and saved work are deleted. This cannot be undone.",
		func(ok bool) {
			if ok {
				p.emptyTrash()
			}
		}, p.w.win)
	d.SetConfirmText("Empty trash")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}

func (p *trashPanel) emptyTrash() {
	p.empty.Disable()
	setStatus(p.status, widget.MediumImportance, "Emptying the trash…")
	u := p.w.u
	u.background(func(ctx context.Context) {
		n, err := u.Backend.EmptyTrash(ctx, nil)
		u.post(func() {
			if err != nil {
				setStatus(p.status, widget.DangerImportance, "Could not empty the trash: "+sentence(err.Error()))
			} else {
				setStatus(p.status, widget.SuccessImportance, fmt.Sprintf("Deleted %d %s for good.", n, pluralWord(n, "session", "sessions")))
			}
			p.load()
		})
	})
}
