package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/workspace"
)

// doStop stops the session; the state events move the header.
func (w *sessionWindow) doStop() {
	w.stopping = true
	w.stop.Disable()
	w.restart.Disable()
	n := w.notice.show(widget.MediumImportance, "Stopping: the agent gets a few seconds to finish, then the VM shuts down…")
	w.spawn(func(ctx context.Context) {
		s, err := w.u.Backend.Stop(ctx, w.id)
		w.ui(func() {
			w.stopping = false
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not stop the session: "+err.Error())
				w.applySession(w.sess)
				return
			}
			w.notice.hideIf(n)
			w.applySession(s)
		})
	})
}

func (w *sessionWindow) doRestart() {
	w.restart.Disable()
	n := w.notice.show(widget.MediumImportance, "Restarting…")
	w.spawn(func(ctx context.Context) {
		s, err := w.u.Backend.Restart(ctx, w.id)
		w.ui(func() {
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not restart the session: "+err.Error())
				w.applySession(w.sess)
				return
			}
			w.notice.hideIf(n)
			w.applySession(s)
		})
	})
}

// doMerge brings the session's branch into the project's repository and
// says what it did; a diverged branch is offered a forced merge.
func (w *sessionWindow) doMerge(force bool) {
	w.merge.Disable()
	w.notice.show(widget.MediumImportance, "Merging "+w.sess.Branch+" into "+w.project.Path+"…")
	w.spawn(func(ctx context.Context) {
		res, err := w.u.Backend.Merge(ctx, w.id, force)
		w.ui(func() {
			setEnabled(w.merge, w.sess.State != session.StateProvisioning)
			switch {
			case errors.Is(err, workspace.ErrDiverged):
				w.notice.show(widget.WarningImportance,
					fmt.Sprintf("The branch %s in %s has commits this session does not have. Overwriting it makes it the session's branch, and those commits are no longer on it.", w.sess.Branch, w.project.Path),
					noticeAction{"Overwrite the branch", widget.DangerImportance, func() { w.doMerge(true) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
			case err != nil:
				w.notice.show(widget.DangerImportance, "Could not merge: "+err.Error())
			default:
				w.u.merges.note(w.sess, res.Commit)
				w.notice.show(mergeImportance(res), mergeMessage(w.sess.Branch, w.project.Path, res))
			}
		})
	})
}

func mergeImportance(r workspace.MergeResult) widget.Importance {
	if len(r.Uncommitted) > 0 {
		return widget.WarningImportance
	}
	return widget.SuccessImportance
}

// mergeMessage says what a merge did, for a person.
func mergeMessage(branch, repo string, r workspace.MergeResult) string {
	var b strings.Builder
	switch {
	case r.Created:
		fmt.Fprintf(&b, "Merged: branch %s created in %s at %s.", branch, repo, shortCommit(r.Commit))
	case r.Updated:
		fmt.Fprintf(&b, "Merged: branch %s in %s moved from %s to %s.", branch, repo, shortCommit(r.Previous), shortCommit(r.Commit))
	default:
		fmt.Fprintf(&b, "Already merged: branch %s in %s is at %s.", branch, repo, shortCommit(r.Commit))
	}
	b.WriteString(" The repository's working tree is untouched.")
	if n := len(r.Submodules); n > 0 {
		fmt.Fprintf(&b, "\nThe session's commits in %s %s are in the repository's copies too, as branch %s.",
			pluralWord(n, "submodule", "submodules"), listSome(r.Submodules, 8), branch)
	}
	if n := len(r.SkippedSubmodules); n > 0 {
		fmt.Fprintf(&b, "\nNot brought into the repository's copies (the session's commits there stay in the session): %s.",
			listSome(r.SkippedSubmodules, 4))
	}
	if n := len(r.Uncommitted); n > 0 {
		fmt.Fprintf(&b, "\n%d %s not committed in the session, so not merged: %s. Ask the agent to commit, then merge again.",
			n, pluralWord(n, "file was", "files were"), listSome(r.Uncommitted, 8))
	}
	return b.String()
}

// doDelete moves the session to the trash, and the notice offers Undo; a
// workspace with work not in the repository is listed and offered a
// forced delete.
func (w *sessionWindow) doDelete(force bool) {
	w.del.Disable()
	w.notice.show(widget.MediumImportance, "Moving the session to the trash…")
	w.spawn(func(ctx context.Context) {
		err := w.u.Backend.Remove(ctx, w.id, force)
		w.ui(func() {
			w.del.Enable()
			var dirty *workspace.DirtyError
			switch {
			case err == nil:
				w.removed() // in the trash, with Undo
			case errors.As(err, &dirty):
				w.notice.show(widget.WarningImportance, dirtyMessage(dirty),
					noticeAction{"Delete anyway", widget.DangerImportance, func() { w.doDelete(true) }},
					noticeAction{"Merge first", widget.HighImportance, func() { w.doMerge(false) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
			case errors.Is(err, session.ErrDirty):
				w.notice.show(widget.WarningImportance, err.Error(),
					noticeAction{"Delete anyway", widget.DangerImportance, func() { w.doDelete(true) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
			default:
				w.notice.show(widget.DangerImportance, "Could not delete the session: "+err.Error())
			}
		})
	})
}

// dirtyMessage lists the work a deletion would lose.
func dirtyMessage(d *workspace.DirtyError) string {
	var b strings.Builder
	b.WriteString("Deleting this session would lose work that is not in the repository:")
	if n := len(d.Uncommitted); n > 0 {
		fmt.Fprintf(&b, "\n• %d %s not committed: %s", n, pluralWord(n, "file", "files"), listSome(d.Uncommitted, 8))
	}
	if n := len(d.Unmerged); n > 0 {
		fmt.Fprintf(&b, "\n• %d %s not merged into %s: %s", n, pluralWord(n, "commit", "commits"), d.Repo, listSome(quoted(d.Unmerged), 8))
	}
	return b.String()
}

// sendChat sends the chat entry's text to the agent.
func (w *sessionWindow) sendChat() {
	text := strings.TrimSpace(w.chat.Text)
	if text == "" || w.chatBusy || w.chat.Disabled() {
		return
	}
	w.chatBusy = true
	w.chatSend.Disable()
	w.chat.SetText("")
	w.spawn(func(ctx context.Context) {
		err := w.u.Backend.Chat(ctx, w.id, text)
		w.ui(func() {
			w.chatBusy = false
			if w.sess.State == session.StateRunning {
				w.chatSend.Enable()
			}
			if err != nil {
				if w.chat.Text == "" {
					w.chat.SetText(text) // nothing is lost
				}
				w.chatNote.Importance = widget.DangerImportance
				w.chatNote.SetText("Not sent: " + err.Error())
				w.chatNote.Show()
				return
			}
			w.chatNote.Importance = widget.LowImportance
			w.chatNote.Hide()
		})
	})
}
