package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
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
			switch {
			case errors.Is(err, session.ErrNotSaved):
				// Stopped, but the work is still only in its clone.
				w.notice.show(widget.DangerImportance, "Stopped, but "+err.Error())
				if s.ID == "" {
					s = w.sess
				}
			case err != nil:
				w.notice.show(widget.DangerImportance, "Could not stop the session: "+err.Error())
				w.applySession(w.sess)
				return
			default:
				w.notice.hideIf(n)
			}
			w.applySession(s)
		})
	})
}

// doResume brings a suspended session back from its saved state, or runs
// a VM paused on a full disk again, at once: where the disk is still full
// it pauses again, and the header says so.
func (w *sessionWindow) doResume() {
	w.resume.Disable()
	w.spawn(func(ctx context.Context) {
		_, err := w.u.Backend.Resume(ctx, w.id)
		w.ui(func() {
			w.resume.Enable()
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not resume the session: "+err.Error())
			}
		})
	})
}

// canInterrupt says whether the session's agent has a turn to end: it
// runs and is not waiting for a message already.
func canInterrupt(s store.Session) bool {
	return s.State == session.StateRunning && s.Activity != session.ActivityWaiting
}

// doInterrupt ends the agent's turn; the VM and the agent run on, and
// the session waits for a message.
func (w *sessionWindow) doInterrupt() {
	w.interrupting = true
	w.interrupt.Disable()
	w.spawn(func(ctx context.Context) {
		err := w.u.Backend.Interrupt(ctx, w.id)
		w.ui(func() {
			w.interrupting = false
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not interrupt the agent: "+err.Error())
			}
			w.applySession(w.sess)
		})
	})
}

func (w *sessionWindow) doRestart() { w.restartFrom(false) }

// restartFrom restarts the session; fromSaved continues from its saved
// work in a new clone, the choice offered when its disk is gone.
func (w *sessionWindow) restartFrom(fromSaved bool) {
	w.restart.Disable()
	n := w.notice.show(widget.MediumImportance, "Restarting…")
	w.spawn(func(ctx context.Context) {
		restart := w.u.Backend.Restart
		if fromSaved {
			restart = w.u.Backend.RestartFromSaved
		}
		s, err := restart(ctx, w.id)
		w.ui(func() {
			if errors.Is(err, session.ErrScratchGone) {
				w.notice.show(widget.WarningImportance, "This session's disk is gone, so it cannot go on where it was. Continue from its last saved work in a new clone, or delete the session.",
					noticeAction{"Continue from saved work", widget.HighImportance, func() { w.restartFrom(true) }},
					noticeAction{"Delete", widget.DangerImportance, func() { w.doDelete(false) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
				w.applySession(w.sess)
				return
			}
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
