package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// The session window's Sync brings the branch checked out in the
// person's repository into the running session's clone as
// origin/<branch>, then offers to merge it there, rebase onto it, or ask
// the agent to. A merge or rebase that stops on conflicts says which
// files, and offers "Ask the agent to resolve".

// syncAction is the Sync button and what it is doing.
type syncAction struct {
	btn     *widget.Button
	running bool // a Sync is in flight
}

// Labels of the sync notice's answers.
const (
	syncMergeLabel   = "Merge it"
	syncRebaseLabel  = "Rebase onto it"
	syncAskLabel     = "Ask the agent to"
	syncResolveLabel = "Ask the agent to resolve"
)

func (w *sessionWindow) buildSyncAction() {
	w.sync = &syncAction{}
	w.sync.btn = widget.NewButtonWithIcon(syncLabel, theme.ViewRefreshIcon(), func() { w.doSync(session.SyncFetch) })
}

// syncLabel is the Sync button's label: short, since the header's
// actions share one row with the session's state; the notice names the
// branch.
const syncLabel = "Sync"

// showSync enables Sync: it works on a running session.
func (w *sessionWindow) showSync() {
	if w.sync == nil {
		return
	}
	setEnabled(w.sync.btn, w.sess.State == session.StateRunning && !w.gone && !w.sync.running)
}

// doSync runs Sync in mode and shows what came of it.
func (w *sessionWindow) doSync(mode session.SyncMode) {
	if w.sync.running {
		return
	}
	w.sync.running = true
	w.showSync()
	branch := "your current branch"
	if w.target.Into != "" {
		branch = "your " + w.target.Into
	}
	busy := map[session.SyncMode]string{
		session.SyncFetch:  "Bringing " + branch + " into the session's clone…",
		session.SyncMerge:  "Bringing " + branch + " into the session's clone and merging it there…",
		session.SyncRebase: "Bringing " + branch + " into the session's clone and rebasing onto it…",
		session.SyncAsk:    "Asking the agent…",
	}[mode]
	w.notice.show(widget.MediumImportance, busy)
	w.spawn(func(ctx context.Context) {
		res, err := w.u.Backend.Sync(ctx, w.id, mode)
		w.ui(func() {
			w.sync.running = false
			w.showSync()
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not sync: "+err.Error())
				return
			}
			w.showSyncResult(res)
		})
	})
}

// showSyncResult puts what Sync did in the notice, with what to do next.
func (w *sessionWindow) showSyncResult(res session.SyncResult) {
	imp, text, actions := syncNotice(res)
	acts := make([]noticeAction, 0, len(actions)+1)
	for _, a := range actions {
		mode := a.mode
		acts = append(acts, noticeAction{a.label, a.importance, func() { w.doSync(mode) }})
	}
	if len(acts) > 0 {
		acts = append(acts, noticeAction{"Not now", widget.MediumImportance, w.notice.hide})
	}
	w.notice.show(imp, text, acts...)
}

// syncAnswer is an answer the sync notice offers: Sync again in mode.
type syncAnswer struct {
	label      string
	importance widget.Importance
	mode       session.SyncMode
}

// syncNotice is the notice for a Sync's result: how it reads, its text,
// and the answers it offers. The file names are the guest's, made safe
// to show by the session (workspace.SafeName).
func syncNotice(res session.SyncResult) (widget.Importance, string, []syncAnswer) {
	ref := res.Ref
	at := fmt.Sprintf("%s is your %s at %s in the session's clone", ref, res.Branch, shortCommit(res.Commit))
	n := len(res.Conflicts) + res.More
	files := listSome(res.Conflicts, 8)
	if res.More > 0 {
		files += fmt.Sprintf(" and %d more", res.More)
	}
	switch {
	case res.Conflicted() && res.Asked != "":
		return widget.SuccessImportance, fmt.Sprintf("Asked the agent to resolve the conflicts in %d %s: %s.", n, pluralWord(n, "file", "files"), files), nil
	case res.Conflicted():
		return widget.WarningImportance,
			fmt.Sprintf("The %s of %s stopped on conflicts in %d %s: %s. They are left in the session's clone: ask the agent to resolve them, or resolve them yourself in the Terminal (git %s --continue).",
				res.Op, ref, n, pluralWord(n, "file", "files"), files, res.Op),
			[]syncAnswer{{syncResolveLabel, widget.HighImportance, session.SyncAsk}}
	case res.Mode == session.SyncMerge:
		return widget.SuccessImportance, fmt.Sprintf("Merged %s into the session's branch in its VM: HEAD is %s.", ref, shortCommit(res.Head)), nil
	case res.Mode == session.SyncRebase:
		return widget.SuccessImportance, fmt.Sprintf("Rebased the session's branch onto %s in its VM: HEAD is %s.", ref, shortCommit(res.Head)), nil
	case res.Mode == session.SyncAsk:
		return widget.SuccessImportance, fmt.Sprintf("Asked the agent to bring %s into its branch.", ref), nil
	case res.Behind == 0:
		return widget.SuccessImportance, at + ": the session's branch has all of it already.", nil
	}
	return widget.MediumImportance,
		fmt.Sprintf("%s: %d %s the session's branch lacks. Merge it there, rebase the session's branch onto it, or ask the agent to bring it in?",
			at, res.Behind, pluralWord(res.Behind, "commit", "commits")),
		[]syncAnswer{
			{syncMergeLabel, widget.HighImportance, session.SyncMerge},
			{syncRebaseLabel, widget.MediumImportance, session.SyncRebase},
			{syncAskLabel, widget.MediumImportance, session.SyncAsk},
		}
}
