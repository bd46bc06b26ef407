package ui

import (
	"context"
	"strconv"

	"sandbar/app/store"
)

// New Session's base branch: a field with the project's local branches
// to pick from (a tag or a commit may still be typed). Until the person
// edits it, it holds the branch checked out in the project's repository.

// setBase puts name in the field without counting it as the person's.
func (w *newSessionWindow) setBase(name string) {
	w.settingBase = true
	w.base.SetText(name)
	w.settingBase = false
}

// loadBranches reads p's branches off the UI goroutine and offers them.
// A repository that cannot be read leaves the field as it is, free to
// type in; Start then says what is wrong.
func (w *newSessionWindow) loadBranches(p store.Project) {
	u := w.u
	u.background(func(ctx context.Context) {
		b, err := u.Backend.Branches(ctx, strconv.FormatInt(p.ID, 10))
		u.post(func() {
			if cur, ok := w.selected(); !ok || cur.ID != p.ID {
				return
			}
			w.branchesOf = p.ID
			if err != nil {
				w.base.SetOptions(nil)
				return
			}
			w.base.SetOptions(b.Names)
			if !w.baseEdited && b.Current != "" {
				w.setBase(b.Current)
			}
			w.validate()
		})
	})
}
