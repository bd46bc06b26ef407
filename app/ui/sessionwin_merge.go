package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// The session window's merge actions say what they do: "Create branch
// sandbar/…" makes the session's branch in the repository and touches
// nothing else; "Merge into <branch>" merges into the branch checked out
// there and updates its working tree, or refuses with the reason. Both
// are off, with the reason beneath them, when there is nothing to merge,
// and the line beneath says where the work last went.

func (w *sessionWindow) buildMergeActions() {
	w.branch = widget.NewButtonWithIcon("Create branch "+w.sess.Branch, theme.ContentAddIcon(), func() { w.doMerge(session.MergeOptions{}) })
	w.merge = widget.NewButtonWithIcon(mergeIntoLabel(""), theme.MailForwardIcon(), func() { w.doMerge(session.MergeOptions{Into: true}) })
	w.merge.Importance = widget.HighImportance
	w.mergeNote = newReadAllLabel()
	w.mergeNote.Importance = widget.LowImportance
	w.mergeNote.Hide()
}

// mergeIntoLabel is the label of the merge action for the repository's
// current branch into ("" when not known yet, or there is none).
func mergeIntoLabel(into string) string {
	if into == "" {
		return "Merge into current branch"
	}
	return "Merge into " + into
}

// refreshMerge reads what the merge actions would do; it runs off the UI
// goroutine.
func (w *sessionWindow) refreshMerge(ctx context.Context) {
	gen := w.targetGen.Add(1)
	t, err := w.u.Backend.MergeTarget(ctx, w.id)
	if ctx.Err() != nil {
		return
	}
	w.ui(func() {
		if gen != w.targetGen.Load() {
			return // a later read, of a later state, answers
		}
		if err != nil {
			// The actions stay on: a merge says what is wrong. (w.sess
			// is the UI goroutine's: read here, not where the read ran.)
			t = session.MergeTarget{Branch: w.sess.Branch}
		}
		w.target = t
		w.showMergeTarget()
	})
}

// showMergeTarget labels and enables the merge actions from the last
// MergeTarget and the session, and writes the line beneath them.
func (w *sessionWindow) showMergeTarget() {
	t, s := w.target, w.sess
	w.merge.SetText(mergeIntoLabel(t.Into))
	w.showSync()
	can := !w.gone && !w.merging && s.State != session.StateProvisioning && t.Nothing == ""
	setEnabled(w.branch, can && t.BranchDone == "")
	// Until MergeTarget answers (Branch is ""), Merge into is on: it
	// merges into whatever branch is checked out, or says why not.
	setEnabled(w.merge, can && t.IntoDone == "" && (t.Into != "" || t.Branch == ""))
	w.showCommit()
	note := w.tildeRepo(mergeNote(t, s))
	w.mergeNote.SetText(note)
	if note == "" {
		w.mergeNote.Hide()
	} else {
		w.mergeNote.Show()
	}
}

// mergeNote is the line beneath the merge actions: why there is nothing
// to merge, the commit Sandbar made of work left uncommitted, and where
// the work last went.
func mergeNote(t session.MergeTarget, s store.Session) string {
	var parts []string
	if t.Nothing != "" {
		parts = append(parts, "Nothing to merge: "+t.Nothing+".")
	}
	if t.AutoCommit != "" {
		parts = append(parts, fmt.Sprintf("Sandbar committed the work the session left uncommitted (%s).", shortCommit(t.AutoCommit)))
	}
	if m := s.Merged; !m.IsZero() {
		where := "into " + m.Into
		if m.Branch {
			where = "as branch " + m.Into
		}
		parts = append(parts, fmt.Sprintf("Merged %s at %s (%s).", where, shortCommit(m.Commit), m.Time.Local().Format("Jan 2 15:04")))
	}
	if t.Nothing == "" {
		if t.IntoDone != "" {
			parts = append(parts, sentence(t.IntoDone))
		} else if t.Branch != "" && t.Into == "" {
			parts = append(parts, "The repository is not on a branch: create the branch instead.")
		}
		if t.BranchDone != "" && !s.Merged.Branch {
			parts = append(parts, sentence(t.BranchDone))
		}
	}
	return strings.Join(parts, " ")
}

// doMerge brings the session's work into the project's repository as o
// says, and says what it did; a diverged branch is offered a forced
// merge, a conflict the branch instead.
func (w *sessionWindow) doMerge(o session.MergeOptions) {
	w.merging, w.mergeStash = true, o.Stash
	w.showMergeTarget()
	repo := tildePath(w.project.Path, w.u.Home)
	what := "Creating branch " + w.sess.Branch + " in " + repo + "…"
	if o.Into {
		what = "Merging into " + w.target.Into + " in " + repo + "…"
	}
	w.notice.show(widget.MediumImportance, what)
	live := session.Live(w.sess.State)
	w.spawn(func(ctx context.Context) {
		res, err := w.u.Backend.Merge(ctx, w.id, o)
		w.ui(func() {
			w.merging = false
			w.showMergeTarget()
			w.spawn(w.refreshMerge)
			switch {
			case errors.Is(err, workspace.ErrDiverged):
				w.notice.show(widget.WarningImportance,
					fmt.Sprintf("The branch %s in %s has commits this session does not have. Overwriting it makes it the session's branch, and those commits are no longer on it.", w.sess.Branch, repo),
					noticeAction{"Overwrite the branch", widget.DangerImportance, func() { w.doMerge(session.MergeOptions{Force: true}) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
			case errors.Is(err, workspace.ErrConflict):
				w.notice.show(widget.WarningImportance, "Not merged: "+w.tildeRepo(err.Error())+".",
					noticeAction{"Create branch " + w.sess.Branch, widget.HighImportance, func() { w.doMerge(session.MergeOptions{}) }},
					noticeAction{"Cancel", widget.MediumImportance, w.notice.hide})
			case errors.Is(err, workspace.ErrNothingToMerge) && live && w.canCommit():
				w.offerCommit(err)
			case errors.Is(err, workspace.ErrStashable):
				w.offerStash(o, err)
			case errors.Is(err, workspace.ErrSteering):
				w.notice.hide()
				w.confirmSteering(err)
			case errors.Is(err, workspace.ErrNothingToMerge), errors.Is(err, workspace.ErrDirtyTree), errors.Is(err, workspace.ErrNoBranch):
				w.notice.show(widget.WarningImportance, "Not merged: "+w.tildeRepo(err.Error())+".")
			case err != nil:
				w.notice.show(widget.DangerImportance, "Could not merge: "+w.tildeRepo(err.Error()))
			default:
				w.notice.show(mergeImportance(res), mergeMessage(w.sess.Branch, repo, res, live))
			}
		})
	})
}

// tildeRepo writes the project's folder in text as tildePath writes it:
// the backend's refusals and notes name it in full.
func (w *sessionWindow) tildeRepo(text string) string {
	if w.project.Path == "" {
		return text
	}
	return strings.ReplaceAll(text, w.project.Path, tildePath(w.project.Path, w.u.Home))
}

func mergeImportance(r workspace.MergeResult) widget.Importance {
	if len(r.Uncommitted) > 0 || r.StashKept != "" {
		return widget.WarningImportance
	}
	return widget.SuccessImportance
}

// mergeMessage says what a merge did, for a person; live says the
// session still runs (its agent can still commit).
func mergeMessage(branch, repo string, r workspace.MergeResult, live bool) string {
	var b strings.Builder
	switch {
	case r.Into != "" && r.FastForward:
		fmt.Fprintf(&b, "Merged into %s in %s: it moved from %s to the session's %s, and the working tree is updated.", r.Into, repo, shortCommit(r.Previous), shortCommit(r.Commit))
	case r.Into != "":
		fmt.Fprintf(&b, "Merged into %s in %s with merge commit %s, and the working tree is updated.", r.Into, repo, shortCommit(r.Commit))
	case r.Created:
		fmt.Fprintf(&b, "Branch %s created in %s at %s. The repository's working tree is untouched.", branch, repo, shortCommit(r.Commit))
	case r.Updated:
		fmt.Fprintf(&b, "Branch %s in %s moved from %s to %s. The repository's working tree is untouched.", branch, repo, shortCommit(r.Previous), shortCommit(r.Commit))
	default:
		fmt.Fprintf(&b, "Branch %s in %s is already at %s. The repository's working tree is untouched.", branch, repo, shortCommit(r.Commit))
	}
	if n := len(r.Submodules); n > 0 {
		fmt.Fprintf(&b, "\nThe session's commits in %s %s are in the repository's copies too, as branch %s.",
			pluralWord(n, "submodule", "submodules"), listSome(r.Submodules, 8), branch)
	}
	if n := len(r.SkippedSubmodules); n > 0 {
		fmt.Fprintf(&b, "\nNot brought into the repository's copies (the session's commits there stay in the session): %s.",
			listSome(r.SkippedSubmodules, 4))
	}
	if n := len(r.Steering); n > 0 {
		names := make([]string, n)
		for i, f := range r.Steering {
			names[i] = displayLine(f.Path)
			if f.NeedsTrust {
				names[i] += " (will need your trust again before Sandbar uses it)"
			}
		}
		fmt.Fprintf(&b, "\nIt changes %d %s that steer tools on your machine: %s. The Changes tab shows their diffs.",
			n, pluralWord(n, "file", "files"), listSome(names, 8))
	}
	if n := len(r.Uncommitted); n > 0 {
		then := "Press Commit now (or ask the agent to commit), then merge again."
		if !live {
			then = "Committing the work a session leaves is off in Settings: restart the session and ask the agent to commit them."
		}
		fmt.Fprintf(&b, "\n%d %s not committed in the session, so not merged: %s. %s",
			n, pluralWord(n, "file was", "files were"), listSome(r.Uncommitted, 8), then)
	}
	b.WriteString(stashNote(r))
	return b.String()
}
