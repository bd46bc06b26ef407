package ui

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// titleEditor is the session window's title with a Rename button, which
// turns the title into a field: Enter or Save renames the session, Esc or
// Cancel leaves it as it was.
type titleEditor struct {
	w       *sessionWindow
	entry   *escEntry
	rename  *widget.Button
	save    *widget.Button
	cancel  *widget.Button
	view    *fyne.Container
	edit    *fyne.Container
	content fyne.CanvasObject
	busy    bool // a rename is in flight
}

func newTitleEditor(w *sessionWindow) *titleEditor {
	t := &titleEditor{w: w, entry: newEscEntry()}
	t.entry.SetPlaceHolder("A title for this session (empty: from its prompt)")
	t.entry.OnSubmitted = func(string) { t.submit() }
	t.entry.onEsc = t.stop
	t.rename = widget.NewButtonWithIcon("Rename", theme.DocumentCreateIcon(), t.start)
	t.rename.Importance = widget.LowImportance
	t.save = widget.NewButtonWithIcon("Save", theme.ConfirmIcon(), t.submit)
	t.save.Importance = widget.HighImportance
	t.cancel = widget.NewButton("Cancel", t.stop)
	t.view = container.NewBorder(nil, nil, nil, container.NewCenter(t.rename), w.name)
	t.edit = container.NewBorder(nil, nil, nil, container.NewHBox(t.save, t.cancel), t.entry)
	t.edit.Hide()
	t.content = container.NewStack(t.view, t.edit)
	return t
}

// start shows the field, holding the title as it is.
func (t *titleEditor) start() {
	t.entry.SetText(session.Title(t.w.sess))
	t.view.Hide()
	t.edit.Show()
	if c := t.w.win.Canvas(); c != nil {
		c.Focus(t.entry)
	}
}

// stop puts the title back in place of the field.
func (t *titleEditor) stop() {
	t.edit.Hide()
	t.view.Show()
}

// submit renames the session to what the field holds; a refusal (a title
// too long) is said in the window, and the field stays for another try.
func (t *titleEditor) submit() {
	if t.busy {
		return
	}
	t.busy = true
	t.save.Disable()
	title := t.entry.Text
	w := t.w
	w.spawn(func(ctx context.Context) {
		s, err := w.u.Backend.Rename(ctx, w.id, title)
		w.ui(func() {
			t.busy = false
			t.save.Enable()
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not rename the session: "+err.Error())
				return
			}
			t.stop()
			w.applySession(s)
		})
	})
}

// showTitle shows the session's title in the header and the window's
// title bar, and its project and branch beneath.
func (w *sessionWindow) showTitle() {
	title := session.Title(w.sess)
	if w.name.Text != title {
		w.name.SetText(title)
	}
	if wt := sessionWindowTitle(title, w.project.Name); w.win.Title() != wt {
		w.win.SetTitle(wt)
	}
	if where := w.project.Name + " · " + w.sess.Branch; w.where.Text != where {
		w.where.SetText(where)
	}
}

// escEntry is an Entry that hands Esc to onEsc.
type escEntry struct {
	widget.Entry
	onEsc func()
}

func newEscEntry() *escEntry {
	e := &escEntry{}
	e.ExtendBaseWidget(e)
	return e
}

// TypedKey implements fyne.Focusable.
func (e *escEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.onEsc != nil {
		e.onEsc()
		return
	}
	e.Entry.TypedKey(k)
}
