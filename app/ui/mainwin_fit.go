package ui

import (
	"context"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// RowsReport is how the Sandbar window's session list lays its rows out:
// how many rows it has room for, how many it laid out, and each text of
// a row that is cut (its cell narrower than the text in its font).
type RowsReport struct {
	Room float32 // rows the list's height holds
	Rows int     // rows laid out
	Cut  []string
}

// MainWindowRows lays the Sandbar window out at size (its canvas, in
// Fyne's units) in app a, for the projects and sessions given (newest
// first) with the saved diff stats their rows show, and reports its
// session list (RowsReport). It builds the window with the window's own
// code and measures every text with the theme's font, following no
// backend, with the widest CPU and memory figures for live sessions
// (the store keeps none): the screenshot test measures the real window's size and the
// real sessions' rows with it, and the window test its own.
func MainWindowRows(a fyne.App, size fyne.Size, projects []store.Project, sessions []store.Session, diffs map[string]workspace.DiffStat, now time.Time) RowsReport {
	a.Settings().SetTheme(Theme())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := &UI{App: a, ctx: ctx, cancel: cancel, post: func(f func()) { f() }}
	mw := newMainWindow(u)
	defer mw.win.Close()
	// The widest figures a live session's row shows: the store keeps
	// none, and the columns must hold them all.
	widest := session.Stats{CPU: 1600, MemUsed: 1023<<20 + 900<<10, MemTotal: 1023<<20 + 900<<10}
	for _, s := range sessions {
		r := &sessionRow{diffAsked: diffKey(s), diff: diffView{note: "not saved yet"}}
		if session.Live(s.State) {
			r.stats = &widest
		}
		if d, ok := diffs[s.ID]; ok {
			r.diff = diffView{stat: d, known: true}
		}
		mw.byID[s.ID] = r
		mw.sessions = append(mw.sessions, r)
	}
	mw.win.Resize(size)
	mw.apply(mainUpdate{all: true, projects: projects, sessions: sessions}, now)
	mw.win.Resize(size)
	return mw.rowsReport()
}

// rowsReport measures the session list as it is laid out now.
func (mw *mainWindow) rowsReport() RowsReport {
	var rep RowsReport
	d := mw.u.App.Driver()
	var rowH float32
	for _, it := range mw.sessItems {
		if it.id == "" || !it.Visible() || d.AbsolutePositionForObject(it).IsZero() {
			continue
		}
		rep.Rows++
		rowH = max(rowH, it.MinSize().Height)
		for _, l := range it.labels() {
			if l == &it.detail.Label {
				// The second line (project · branch — reason) may be cut:
				// the session's window says it whole.
				continue
			}
			whole := widget.NewLabelWithStyle(l.Text, l.Alignment, l.TextStyle)
			whole.SizeName = l.SizeName
			if need, have := whole.MinSize().Width, l.Size().Width; need > have+0.5 {
				rep.Cut = append(rep.Cut, fmt.Sprintf("row %q: %q needs %.0f, its cell gives it %.0f", it.shown.title, l.Text, need, have))
			}
		}
	}
	if rowH > 0 {
		rep.Room = mw.sessionList.Size().Height / (rowH + theme.SeparatorThicknessSize())
	}
	return rep
}
