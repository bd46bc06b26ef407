package ui

import (
	"context"
	"errors"
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
	sbwidget "sandbar/app/ui/widget"
)

// envStoragePanel is the Storage tab's environments: the prepared
// environments of every project and the images pulled for them, what
// each takes, when it was last used, and a Remove for each. Sandbar
// prunes both by itself (unused for two weeks); this is for the person
// who wants the disk back now. Image references and errors came from
// repositories' files: shown as plain text.
type envStoragePanel struct {
	w      *settingsWindow
	items  []envStorageItem
	list   *widget.List
	total  *widget.Label
	status *widget.Label
	box    fyne.CanvasObject
}

// envStorageItem is one prepared environment or pulled image.
type envStorageItem struct {
	label, state, used string
	bytes              int64
	// Either a prepared environment (project's path and key) or an
	// image (its digest).
	project, key, digest string
	// busy says what boots on it: Remove is refused then.
	busy string
}

func newEnvStoragePanel(w *settingsWindow) *envStoragePanel {
	p := &envStoragePanel{w: w}
	p.list = newStorageList(func() int { return len(p.items) }, columns{4, 1.6, 1.6, 1.2}, "Remove", theme.DeleteIcon(), func(i int) storageListRow {
		it := p.items[i]
		return storageListRow{cells: []string{it.label, it.state, it.used}, bytes: it.bytes, tap: func() { p.confirmRemove(it) }}
	})
	p.total = widget.NewLabel("Environments")
	p.total.TextStyle = fyne.TextStyle{Bold: true}
	p.status = statusLabel()
	top := container.NewVBox(
		container.NewHBox(p.total, layout.NewSpacer()),
		note("Projects' prepared environments and the images pulled for them. Sandbar removes those no session used for two weeks; one a session boots on stays."),
		p.status)
	p.box = container.NewBorder(top, nil, nil, nil, p.list)
	return p
}

// load reads the prepared environments and the images off the UI
// goroutine.
func (p *envStoragePanel) load() {
	u := p.w.u
	u.background(func(ctx context.Context) {
		envs, err := u.Backend.PreparedEnvironments(ctx)
		imgs, ierr := u.Backend.EnvImages(ctx)
		projects, _ := u.Backend.Projects(ctx)
		paths := map[int64]string{}
		for _, pr := range projects {
			paths[pr.ID] = pr.Path
		}
		items := envStorageItems(envs, imgs, paths, time.Now())
		u.post(func() { p.set(items, errors.Join(err, ierr)) })
	})
}

// envStorageItems are the rows: prepared environments by project, the
// newest first, then the images, the most recently used first.
func envStorageItems(envs []session.PreparedEnv, imgs []session.EnvImage, paths map[int64]string, now time.Time) []envStorageItem {
	var out []envStorageItem
	for _, e := range envs {
		label := fmt.Sprintf("%s · prepared environment %s on %s", e.ProjectName, e.KeyShort, shortCommit(e.Commit))
		if e.Image != "" {
			label += " · " + envText(e.Image)
		}
		state := e.State
		if e.State == session.PrepFailed {
			state = "failed: " + envText(firstLine(e.Error))
		}
		out = append(out, envStorageItem{label: label, state: state, used: "used " + ageWords(now, e.LastUse),
			bytes: e.Size, project: paths[e.ProjectID], key: e.Name})
	}
	for _, img := range imgs {
		state := "image, " + envText(img.Platform)
		if img.InUse != "" {
			state = "in use: " + envText(img.InUse)
		}
		out = append(out, envStorageItem{label: "image " + envText(img.Ref) + " · " + shortDigest(img.Digest), state: state,
			used: "used " + ageWords(now, img.LastUse), bytes: img.Size, digest: img.Digest, busy: img.InUse})
	}
	return out
}

func (p *envStoragePanel) set(items []envStorageItem, err error) {
	p.items = items
	p.list.Refresh()
	var total int64
	for _, it := range items {
		total += it.bytes
	}
	if len(items) == 0 {
		p.total.SetText("Environments: none kept")
	} else {
		p.total.SetText(fmt.Sprintf("Environments: %d, %s", len(items), doctor.HumanBytes(total)))
	}
	if err != nil {
		setStatus(p.status, widget.DangerImportance, "Could not read the environments: "+sentence(err.Error()))
	}
}

func (p *envStoragePanel) confirmRemove(it envStorageItem) {
	what := "The project's next session prepares it again, once, and waits for it."
	if it.digest != "" {
		what = "A project whose environment names it pulls it again when a session starts."
	}
	d := dialog.NewConfirm("Remove "+sbwidget.ClipRunes(it.label, 120)+"?", what, func(ok bool) {
		if ok {
			p.remove(it)
		}
	}, p.w.win)
	d.SetConfirmText("Remove")
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}

// remove deletes one; the backend refuses one a session boots on, and
// the status line says so.
func (p *envStoragePanel) remove(it envStorageItem) {
	setStatus(p.status, widget.MediumImportance, "Removing "+sbwidget.ClipRunes(it.label, 120)+"…")
	u := p.w.u
	u.background(func(ctx context.Context) {
		var err error
		if it.digest != "" {
			err = u.Backend.RemoveEnvImage(ctx, it.digest)
		} else {
			err = u.Backend.RemovePreparedEnvironment(ctx, it.project, it.key)
		}
		u.post(func() {
			if err != nil {
				setStatus(p.status, widget.DangerImportance, "Not removed: "+sentence(err.Error()))
			} else {
				setStatus(p.status, widget.SuccessImportance, fmt.Sprintf("Removed %s: %s freed.", sbwidget.ClipRunes(it.label, 120), doctor.HumanBytes(it.bytes)))
			}
			p.load()
		})
	})
}
