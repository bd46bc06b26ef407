package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/workspace"
)

// "Commit now" saves a running session's work and commits it on its
// branch (session.Service.Commit), so that the merge actions beside it
// take the session's work without stopping it. "Stash, merge, unstash"
// is what a merge into a working tree with unrelated uncommitted changes
// offers (session.MergeOptions.Stash).

// buildCommitAction makes the Commit now button; it lives with the
// merge actions.
func (w *sessionWindow) buildCommitAction() {
	w.commitNow = widget.NewButtonWithIcon("Commit now", theme.DocumentSaveIcon(), w.doCommit)
	setEnabled(w.commitNow, false)
}

// canCommit says whether Commit now may be pressed: the session runs
// and no commit is in flight.
func (w *sessionWindow) canCommit() bool {
	return w.sess.State == session.StateRunning && !w.committing && !w.gone && !w.merging
}

// showCommit enables Commit now from the session's state.
func (w *sessionWindow) showCommit() {
	if w.commitNow != nil {
		setEnabled(w.commitNow, w.canCommit())
	}
}

// doCommit commits the running session's work, and says what it made.
func (w *sessionWindow) doCommit() {
	w.committing = true
	w.showCommit()
	w.notice.show(widget.MediumImportance, "Saving and committing the session's work…")
	w.spawn(func(ctx context.Context) {
		res, err := w.u.Backend.Commit(ctx, w.id, "")
		w.ui(func() {
			w.committing = false
			w.showCommit()
			w.spawn(w.refreshMerge)
			w.spawn(w.changes.reload)
			switch {
			case errors.Is(err, session.ErrNothingToCommit):
				w.notice.show(widget.MediumImportance, sentence(err.Error()))
			case err != nil:
				w.notice.show(widget.DangerImportance, "Could not commit: "+w.tildeRepo(err.Error()))
			default:
				w.notice.show(commitImportance(res), commitMessageText(res))
			}
		})
	})
}

func commitImportance(r session.CommitResult) widget.Importance {
	if r.Working || r.NotInClone != "" {
		return widget.WarningImportance
	}
	return widget.SuccessImportance
}

// commitMessageText says what Commit now made, for a person.
func commitMessageText(r session.CommitResult) string {
	var b strings.Builder
	n := len(r.Files)
	fmt.Fprintf(&b, "Committed the session's work (%d %s) on %s as %s %q. Merge brings it home.",
		n, pluralWord(n, "file", "files"), r.Branch, shortCommit(r.Commit), displayLine(r.Subject))
	if r.Working {
		b.WriteString("\nThe agent was in the middle of a turn: what was on its disk then is committed, and what it writes after stays uncommitted.")
	}
	if r.NotInClone != "" {
		fmt.Fprintf(&b, "\nThe clone in the VM did not take the commit (%s): the next save takes the clone's branch as it is, so press Commit now again once the agent is idle.", displayLine(r.NotInClone))
	}
	return b.String()
}

// offerCommit shows a running session's merge refused for want of a
// commit with the way on: Commit now.
func (w *sessionWindow) offerCommit(err error) {
	w.notice.show(widget.WarningImportance, "Not merged: "+w.tildeRepo(err.Error())+".",
		noticeAction{"Commit now", widget.HighImportance, w.doCommit},
		noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
}

// offerStash shows a merge refused for unrelated uncommitted changes
// with the way on: Stash, merge, unstash, with the options the refused
// merge had.
func (w *sessionWindow) offerStash(o session.MergeOptions, err error) {
	o.Into, o.Stash = true, true
	w.notice.show(widget.WarningImportance, "Not merged: "+w.tildeRepo(err.Error())+".",
		noticeAction{"Stash, merge, unstash", widget.HighImportance, func() { w.doMerge(o) }},
		noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
}

// stashNote is what a merge with the stash adds to its message.
func stashNote(r workspace.MergeResult) string {
	switch {
	case r.StashKept != "":
		return "\nBut " + r.StashKept + "."
	case len(r.Stashed) > 0:
		n := len(r.Stashed)
		return fmt.Sprintf("\nYour uncommitted changes in %d %s (%s) were stashed for the merge and put back.", n, pluralWord(n, "file", "files"), listSome(r.Stashed, 8))
	}
	return ""
}
