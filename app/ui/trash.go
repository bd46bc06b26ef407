package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// A deleted session goes to the trash (session.Service.Remove), whence it
// can be restored for a week: every place that deletes says so and offers
// Undo, and Settings › Storage lists what the trash holds
// (settings_trash.go).

// trashKeepWords is how long the trash keeps a session, for a person.
func trashKeepWords() string {
	days := int(session.DefaultTrashKeep.Hours() / 24)
	return fmt.Sprintf("%d %s", days, pluralWord(days, "day", "days"))
}

// deletedMessage says that a session went to the trash, and for how long.
func deletedMessage(label string) string {
	return fmt.Sprintf("Moved “%s” to the trash. It is kept there for %s: Undo brings it back, or Settings › Storage later.", label, trashKeepWords())
}

// showAction puts msg in the banner with one button beside it; the
// button hides the banner and then does do.
func (b *banner) showAction(kind bannerKind, msg, label string, do func()) {
	b.show(kind, msg)
	b.action.SetText(label)
	b.action.Importance = widget.HighImportance
	b.action.OnTapped = func() {
		b.hide()
		do()
	}
	b.action.Show()
}

// showDeleted tells, in the Sandbar window's banner, that a session went
// to the trash, with Undo.
func (mw *mainWindow) showDeleted(id, label string) {
	mw.banner.showAction(bannerInfo, deletedMessage(label), "Undo", func() { mw.u.restore(id, label, mw.restored) })
}

// restored says how an Undo went, in the Sandbar window's banner.
func (mw *mainWindow) restored(label string, err error) {
	if err != nil {
		mw.banner.show(bannerError, fmt.Sprintf("Could not restore “%s”: %s", label, sentence(err.Error())))
		return
	}
	mw.banner.show(bannerSuccess, fmt.Sprintf("Restored “%s”.", label))
	mw.reload()
}

// restore brings a session back from the trash off the UI goroutine, and
// calls done on it with the outcome.
func (u *UI) restore(id, label string, done func(label string, err error)) {
	u.background(func(ctx context.Context) {
		_, err := u.Backend.Restore(ctx, id)
		u.post(func() { done(label, err) })
	})
}

// trashedNotice is what a session window says once its session is in the
// trash: where it went, with Undo, which opens the restored session
// afresh.
func (w *sessionWindow) trashedNotice() {
	label := w.sessionLabel()
	w.notice.show(widget.WarningImportance, deletedMessage(label),
		noticeAction{"Undo", widget.HighImportance, func() {
			w.notice.show(widget.MediumImportance, "Restoring…")
			w.u.restore(w.id, label, func(label string, err error) {
				if err != nil {
					w.notice.show(widget.DangerImportance, fmt.Sprintf("Could not restore “%s”: %s", label, sentence(err.Error())))
					return
				}
				id := w.id
				w.win.Close()
				w.u.ShowSession(id)
			})
		}},
		noticeAction{"Close window", widget.MediumImportance, func() { w.win.Close() }})
}

// sessionLabel names the session for a person: its title.
func (w *sessionWindow) sessionLabel() string {
	return session.Title(w.sess)
}
