package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2/dialog"

	"sandbar/app/session"
	"sandbar/app/store"
)

// confirmTrashProjectSessions is Remove for a project that has sessions:
// Sandbar forgets a project only once it has none, so it offers to move
// them to the trash first (Undo, or Settings → Storage, brings each
// back). A session whose work is not in the repository stays, named.
// Then the banner offers to remove the project (which empties its
// sessions from the trash for good); it said only what to type.
func (mw *mainWindow) confirmTrashProjectSessions(p store.Project) {
	n := mw.counts[p.ID]
	d := dialog.NewConfirm("Remove "+p.Name+"?",
		fmt.Sprintf("%s still has %s. Sandbar removes a project once it has none: move them to the trash first? "+
			"A session whose work is not merged or on a branch stays, so nothing is lost.", p.Name, plural(n, "session", "sessions")),
		func(ok bool) {
			if ok {
				mw.trashProjectSessions(p)
			}
		}, mw.win)
	d.SetConfirmText("Move to Trash")
	d.SetDismissText("Cancel")
	d.Show()
}

// trashProjectSessions moves the project's sessions to the trash, off the
// UI goroutine, and says in the banner how it went.
func (mw *mainWindow) trashProjectSessions(p store.Project) {
	mw.banner.show(bannerInfo, "Moving the sessions of "+p.Name+" to the trash…")
	mw.u.background(func(ctx context.Context) {
		var moved int
		var kept []string
		ss, err := mw.u.Backend.List(ctx)
		for _, s := range ss {
			if s.ProjectID != p.ID {
				continue
			}
			if rerr := mw.u.Backend.Remove(ctx, s.ID, false); rerr != nil {
				kept = append(kept, "“"+session.Title(s)+"”: "+sentence(rerr.Error()))
				continue
			}
			moved++
		}
		mw.u.post(func() {
			mw.reload()
			switch {
			case err != nil:
				mw.banner.show(bannerError, "Could not list the sessions of "+p.Name+": "+sentence(err.Error()))
			case len(kept) > 0:
				mw.banner.show(bannerError, fmt.Sprintf("Moved %s of %s to the trash; %s kept, to merge or delete from its window first: %s",
					plural(moved, "session", "sessions"), p.Name, plural(len(kept), "session is", "sessions are"), strings.Join(kept, " ")))
			default:
				mw.banner.showAction(bannerSuccess, fmt.Sprintf("Moved %s of %s to the trash. Remove %s now to forget it; its sessions in the trash go with it.",
					plural(moved, "session", "sessions"), p.Name, p.Name),
					"Remove "+p.Name, func() { mw.removeProject(p) })
			}
		})
	})
}
