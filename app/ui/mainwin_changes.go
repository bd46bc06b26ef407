package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// This file gives each row of the Sandbar window its Changes cell: the
// session's diff stat ("+120 −14, 3 files") above where its work went
// ("merged into main", "not merged").
//
// Where the stat comes from: a session that has saved its work (on
// stop, merge, export) is summed from Sandbar's repository of its
// project (session.Service.DiffStat: git diff-tree --numstat, counted
// once per saved commit); a running session shows the live changes its
// VM reports (the workspace:changed events the session window also
// shows, read for their summary line) as soon as one arrives, and its
// last save until then. The window asks for a saved stat only when a
// session's record changes, never on the second's tick or the resync.

// diffView is what a row knows of its session's changes.
type diffView struct {
	stat  workspace.DiffStat
	known bool   // stat holds a count
	live  bool   // stat is the running VM's, not a save's
	note  string // when not known: why ("not saved yet")
}

// diffAsk is how long the window waits for one saved stat.
const diffAsk = 30 * time.Second

// diffKey is what a saved stat is fetched again for: the record's
// state, its last update and its last merge.
func diffKey(s store.Session) string {
	return fmt.Sprintf("%s %d %s", s.State, s.Updated.UnixNano(), s.Merged.Commit)
}

// diffStatWords is a stat as a row says it: "+120 −14, 3 files".
func diffStatWords(d workspace.DiffStat) string {
	if d.IsZero() {
		return "no changes"
	}
	files := plural(d.Files, "file", "files")
	switch {
	case d.FilesOnly:
		return files + " (lines not counted)"
	case d.Added == 0 && d.Deleted == 0:
		// Binary files, or (live) untracked ones, whose lines the VM's
		// diff --stat does not count.
		return files
	}
	return fmt.Sprintf("+%d –%d, %s", d.Added, d.Deleted, files)
}

// plural is n with the word that fits it: "1 file", "3 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// mergedWords says where a session's work last went, from the same
// record as `sandbar ls`'s MERGED column (store.Session.Merged).
func mergedWords(m store.Merge) string {
	switch {
	case m.IsZero():
		return "not merged"
	case m.Branch:
		return "branch " + m.Into + " created"
	}
	return "merged into " + m.Into
}

// changesWords are a row's Changes cell: its stat, and beneath it where
// the work went (with "live" when the stat is the running VM's).
func changesWords(s store.Session, d diffView) (stat, merged string) {
	merged = mergedWords(s.Merged)
	switch {
	case d.known:
		stat = diffStatWords(d.stat)
		if d.live {
			merged = "live · " + merged
		}
	case d.note != "":
		stat = d.note
	default:
		stat = "…"
	}
	return stat, merged
}

// ageWords is how long ago t was, as a glance wants it: "just now",
// "5 min ago", "2 h ago", "3 days ago".
func ageWords(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

// liveDiff reads a running session's changes as its VM reported them:
// the files (untracked ones included) and the summary line of git diff
// --stat (lines of tracked files). A stat it cannot read is no count.
func liveDiff(ch workspace.Changes) (diffView, bool) {
	d, err := workspace.ParseStatSummary(ch.DiffStat)
	if err != nil {
		return diffView{}, false
	}
	d.Files = max(d.Files, len(ch.Files))
	return diffView{stat: d, known: true, live: true}, true
}

// fetchDiffs asks for the saved stat of each row whose record changed
// since its last ask, one ask per row at a time, off the UI goroutine.
func (mw *mainWindow) fetchDiffs(rows []*sessionRow) {
	for _, r := range rows {
		key := diffKey(r.s)
		if r.diffAsked == key || r.diffBusy {
			continue
		}
		r.diffAsked, r.diffBusy = key, true
		id := r.s.ID
		mw.u.background(func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, diffAsk)
			defer cancel()
			d, err := mw.u.Backend.DiffStat(ctx, id)
			mw.u.post(func() { mw.gotDiff(id, d, err) })
		})
	}
}

// gotDiff shows a saved stat in its row, and asks again if the record
// changed while it was counted.
func (mw *mainWindow) gotDiff(id string, d workspace.DiffStat, err error) {
	r := mw.byID[id]
	if r == nil {
		return
	}
	r.diffBusy = false
	if !r.diff.live || !session.Live(r.s.State) {
		switch {
		case err == nil:
			r.diff = diffView{stat: d, known: true}
		case errors.Is(err, session.ErrNothingSaved):
			r.diff = diffView{note: "not saved yet"}
		default:
			slog.Debug("diff stat", "session", id, "err", err)
			r.diff = diffView{note: "—"}
		}
	}
	mw.redrawRow(r, time.Now())
	if r.diffAsked != diffKey(r.s) {
		mw.fetchDiffs([]*sessionRow{r})
	}
}
