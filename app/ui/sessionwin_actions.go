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
				w.notice.show(widget.WarningImportance, dirtyMessage(dirty, w.u.Home),
					noticeAction{"Delete anyway", widget.DangerImportance, func() { w.doDelete(true) }},
					noticeAction{"Create branch first", widget.HighImportance, func() { w.doMerge(session.MergeOptions{}) }},
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

// dirtyMessage lists the work a deletion would lose; the repository's
// folder is written as tildePath writes it.
func dirtyMessage(d *workspace.DirtyError, home string) string {
	var b strings.Builder
	b.WriteString("Deleting this session would lose work that is not in the repository:")
	if n := len(d.Uncommitted); n > 0 {
		fmt.Fprintf(&b, "\n• %d %s not committed: %s", n, pluralWord(n, "file", "files"), listSome(d.Uncommitted, 8))
	}
	if n := len(d.Unmerged); n > 0 {
		fmt.Fprintf(&b, "\n• %d %s not merged into %s: %s", n, pluralWord(n, "commit", "commits"), tildePath(d.Repo, home), listSome(quoted(d.Unmerged), 8))
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
