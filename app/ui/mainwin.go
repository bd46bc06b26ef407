package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/store"
)

// mainWindow is the Sandbar window: projects above, sessions below, and
// the whole window a drop zone for repository folders. Its rows follow
// the backend's events (see mainwin_live.go).
type mainWindow struct {
	u      *UI
	win    fyne.Window
	stop   context.CancelFunc
	banner *banner
	// trustBanner says which projects' repository settings wait for the
	// person's trust (see showTrust).
	trustBanner *banner
	trustShown  string // the trust banner's last message

	projects    []store.Project
	counts      map[int64]int // sessions per project
	projectList *widget.List
	projItems   []*projectItem // every row widget the list made, for drops

	reloadC chan struct{} // asks follow to reread everything

	sessions    []*sessionRow // newest first
	byID        map[string]*sessionRow
	sessionList *widget.List
	sessItems   []*sessionItem // every row widget the list made (rowsReport)
	noSessions  fyne.CanvasObject

	body  fyne.CanvasObject // the lists
	empty fyne.CanvasObject // the drop zone shown while there are no projects

	// loaded is set once the first load from the backend arrived.
	loaded bool
	// rowUpdates counts redraws of each session's row, so tests can tell
	// that an event redraws only the row it is about.
	rowUpdates map[string]int
}

func newMainWindow(u *UI) *mainWindow {
	mw := &mainWindow{u: u, win: u.App.NewWindow("Sandbar"), banner: newBanner(), trustBanner: newBanner(),
		counts: map[int64]int{}, reloadC: make(chan struct{}, 1), byID: map[string]*sessionRow{}, rowUpdates: map[string]int{}}

	mw.projectList = widget.NewList(
		func() int { return len(mw.projects) },
		func() fyne.CanvasObject { return mw.newProjectItem() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(mw.projects) {
				p := mw.projects[i]
				o.(*projectItem).set(i, p, mw.counts[p.ID])
			}
		})
	mw.projectList.OnSelected = func(widget.ListItemID) { mw.projectList.UnselectAll() }

	mw.sessionList = widget.NewList(
		func() int { return len(mw.sessions) },
		func() fyne.CanvasObject {
			it := newSessionItem(mw)
			if len(mw.sessItems) > 64 {
				// Rows the list let go of are in no tree: forget them.
				d := mw.u.App.Driver()
				mw.sessItems = slices.DeleteFunc(mw.sessItems, func(x *sessionItem) bool { return d.AbsolutePositionForObject(x).IsZero() })
			}
			mw.sessItems = append(mw.sessItems, it)
			return it
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(mw.sessions) {
				r := mw.sessions[i]
				if o.(*sessionItem).set(r.s.ID, r.cells) {
					mw.rowUpdates[r.s.ID]++
				}
			}
		})
	mw.sessionList.OnSelected = func(i widget.ListItemID) {
		mw.sessionList.UnselectAll()
		if i < len(mw.sessions) && mw.u.OpenSession != nil {
			mw.u.openSession(mw.sessions[i].s.ID)
		}
	}

	newBtn := widget.NewButtonWithIcon("New Session…", theme.ContentAddIcon(), func() { mw.u.ShowNewSession(0) })
	newBtn.Importance = widget.HighImportance
	addBtn := widget.NewButtonWithIcon("Add Repository…", theme.FolderOpenIcon(), func() { mw.u.AddRepository(mw.added) })
	byPathBtn := widget.NewButton("Add by Path…", func() { mw.u.ShowAddByPath(mw.added, "") })
	settingsBtn := widget.NewButtonWithIcon("Settings", theme.SettingsIcon(), mw.u.ShowSettings)
	toolbar := container.NewHBox(newBtn, addBtn, byPathBtn, layout.NewSpacer(), settingsBtn)

	projectsHeader := container.NewBorder(nil, nil, heading("Projects"), widget.NewLabelWithStyle("drop a folder on a project to start a session", fyne.TextAlignTrailing, fyne.TextStyle{Italic: true}))
	projects := container.NewBorder(projectsHeader, nil, nil, nil, mw.projectList)

	noSessions := widget.NewLabelWithStyle("No sessions yet: press Start on a project.", fyne.TextAlignCenter, fyne.TextStyle{Italic: true})
	mw.noSessions = container.NewCenter(noSessions)
	sessions := container.NewBorder(container.NewVBox(heading("Sessions"), sessionHeader()), nil, nil, nil,
		container.NewStack(mw.sessionList, mw.noSessions))

	split := container.NewVSplit(projects, sessions)
	split.Offset = 0.3
	mw.body = split
	mw.empty = dropZone("Drop a repository folder here",
		"Sandbar runs a coding agent on its own clone of the repository, in its own VM. Or press Add Repository… above.")
	mw.empty.Hide()
	mw.body.Hide()

	mw.win.SetContent(container.NewBorder(container.NewVBox(toolbar, mw.trustBanner.box, mw.banner.box), nil, nil, nil,
		container.NewStack(mw.body, mw.empty)))
	mw.win.Resize(mainWindowSize())
	mw.win.SetOnDropped(mw.dropped)
	mw.stop = func() {} // ShowMain starts following the backend
	mw.win.SetOnClosed(func() {
		mw.stop()
		if u.mainWin == mw {
			u.mainWin = nil
		}
	})
	return mw
}

// mainWindowSize is the Sandbar window's first size (clamped to the
// screen's work area): at 1280×800 it shows at least five sessions, each
// with its state, changes and age whole (TestMainWindowRowsFitAt1280).
func mainWindowSize() fyne.Size { return fyne.NewSize(1240, 740) }

// heading is a section's title.
func heading(text string) *widget.Label {
	return widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

// dropZone is a big, friendly empty state inviting a drop.
func dropZone(title, hint string) fyne.CanvasObject {
	icon := widget.NewIcon(theme.FolderOpenIcon())
	t := widget.NewLabelWithStyle(title, fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	t.SizeName = theme.SizeNameSubHeadingText
	h := widget.NewLabelWithStyle(hint, fyne.TextAlignCenter, fyne.TextStyle{})
	h.Wrapping = fyne.TextWrapWord
	iconBox := container.NewCenter(container.NewGridWrap(fyne.NewSquareSize(theme.IconInlineSize()*4), icon))
	return container.NewCenter(container.NewVBox(iconBox, t, container.NewGridWrap(fyne.NewSize(420, h.MinSize().Height*2.5), h)))
}

// dropped is the window's drop handler: onto a project row it opens New
// Session for that project; anywhere else each folder is added as a
// project.
func (mw *mainWindow) dropped(pos fyne.Position, uris []fyne.URI) {
	if p, ok := mw.projectAt(pos); ok {
		mw.u.ShowNewSession(p.ID)
		return
	}
	mw.u.addProjects(uris, mw.added)
}

// added shows what adding folders did, and the projects added.
func (mw *mainWindow) added(r addResult) {
	mw.banner.show(r.kind(), r.message(mw.u.Home))
	if len(r.added) > 0 {
		mw.reload()
	}
}

// projectAt returns the project whose row is under pos, in window
// coordinates. A row the list holds in reserve is in no tree, so the
// driver puts it at the origin, where no row of this window ever is.
func (mw *mainWindow) projectAt(pos fyne.Position) (store.Project, bool) {
	if !mw.body.Visible() {
		return store.Project{}, false
	}
	d := mw.u.App.Driver()
	lp, ls := d.AbsolutePositionForObject(mw.projectList), mw.projectList.Size()
	if !inside(pos, lp, ls) {
		return store.Project{}, false
	}
	for _, it := range mw.projItems {
		ip := d.AbsolutePositionForObject(it)
		if ip.IsZero() || !it.Visible() || it.index >= len(mw.projects) {
			continue
		}
		if inside(pos, ip, it.Size()) && mw.projects[it.index].ID == it.projectID {
			return mw.projects[it.index], true
		}
	}
	return store.Project{}, false
}

func inside(p, at fyne.Position, size fyne.Size) bool {
	return p.X >= at.X && p.Y >= at.Y && p.X < at.X+size.Width && p.Y < at.Y+size.Height
}

// addResult is what adding dropped folders did.
type addResult struct {
	added    []store.Project
	notes    []string
	problems []string
}

func (r addResult) kind() bannerKind {
	switch {
	case len(r.problems) > 0:
		return bannerError
	case len(r.added) > 0:
		return bannerSuccess
	}
	return bannerInfo
}

// message says what happened, with paths under home written ~.
func (r addResult) message(home string) string {
	var lines []string
	for _, p := range r.added {
		lines = append(lines, fmt.Sprintf("Added %s (%s, branch %s).", p.Name, tildePath(p.Path, home), branchOrNone(p.DefaultBranch)))
	}
	lines = append(lines, r.notes...)
	lines = append(lines, r.problems...)
	return strings.Join(lines, "\n")
}

func branchOrNone(b string) string {
	if b == "" {
		return "detached"
	}
	return b
}

// sentence capitalises s and ends it with a full stop, for a message a
// person reads.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// projectItem is one project's row: name, path, branch, sessions and
// its actions.
type projectItem struct {
	widget.BaseWidget
	mw        *mainWindow
	index     int
	projectID int64

	name, path, branch, count *widget.Label
	start, settings, remove   *widget.Button
	content                   fyne.CanvasObject
	shown                     store.Project
	shownCount                int
}

func (mw *mainWindow) newProjectItem() *projectItem {
	it := &projectItem{mw: mw,
		name:   widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		path:   widget.NewLabel(""),
		branch: widget.NewLabel(""),
		count:  widget.NewLabel(""),
	}
	it.name.Truncation = fyne.TextTruncateEllipsis
	it.path.Truncation = fyne.TextTruncateEllipsis
	it.path.Importance = widget.LowImportance
	it.path.SizeName = theme.SizeNameCaptionText
	it.branch.Truncation = fyne.TextTruncateEllipsis
	it.start = widget.NewButtonWithIcon("Start", theme.MediaPlayIcon(), func() { mw.u.ShowNewSession(it.projectID) })
	// Project Settings: the secrets its sessions get and its network rules.
	it.settings = widget.NewButtonWithIcon("Settings", theme.SettingsIcon(), func() { mw.u.ShowProjectSettings(it.projectID) })
	it.settings.Importance = widget.LowImportance
	it.remove = widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), func() { mw.confirmRemoveProject(it.projectID) })
	it.remove.Importance = widget.LowImportance
	it.count.Truncation = fyne.TextTruncateEllipsis
	info := container.New(columns{3, 1.2, 1}, container.NewVBox(it.name, it.path), vcenter(it.branch), vcenter(it.count))
	it.content = container.NewBorder(nil, nil, nil, container.NewHBox(vcenter(it.start), vcenter(it.settings), vcenter(it.remove)), info)
	it.ExtendBaseWidget(it)
	if len(mw.projItems) > 64 {
		// Rows the list let go of are in no tree: forget them.
		d := mw.u.App.Driver()
		mw.projItems = slices.DeleteFunc(mw.projItems, func(x *projectItem) bool { return d.AbsolutePositionForObject(x).IsZero() })
	}
	mw.projItems = append(mw.projItems, it)
	return it
}

func (it *projectItem) set(index int, p store.Project, sessions int) {
	it.index, it.projectID = index, p.ID
	if p == it.shown && sessions == it.shownCount {
		return
	}
	it.shown, it.shownCount = p, sessions
	it.name.SetText(p.Name)
	it.path.SetText(tildePath(p.Path, it.mw.u.Home))
	it.branch.SetText(branchOrNone(p.DefaultBranch))
	switch sessions {
	case 0:
		it.count.SetText("no sessions")
	case 1:
		it.count.SetText("1 session")
	default:
		it.count.SetText(fmt.Sprintf("%d sessions", sessions))
	}
}

// CreateRenderer implements fyne.Widget.
func (it *projectItem) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(it.content)
}

// confirmRemoveProject forgets a project after asking; its repository
// is never touched, and the backend refuses while it has sessions.
func (mw *mainWindow) confirmRemoveProject(id int64) {
	i := slices.IndexFunc(mw.projects, func(p store.Project) bool { return p.ID == id })
	if i < 0 {
		return
	}
	p := mw.projects[i]
	if mw.counts[id] > 0 {
		mw.confirmTrashProjectSessions(p)
		return
	}
	d := dialog.NewConfirm("Remove "+p.Name+"?",
		"Sandbar forgets the project; the repository at "+tildePath(p.Path, mw.u.Home)+" is not touched.",
		func(ok bool) {
			if ok {
				mw.removeProject(p)
			}
		}, mw.win)
	d.SetConfirmText("Remove")
	d.SetDismissText("Cancel")
	d.Show()
}

// removeProject forgets p, off the UI goroutine, and says how it went.
func (mw *mainWindow) removeProject(p store.Project) {
	mw.u.background(func(ctx context.Context) {
		err := mw.u.Backend.RemoveProject(ctx, fmt.Sprint(p.ID))
		mw.u.post(func() {
			if err != nil {
				mw.banner.show(bannerError, sentence(err.Error()))
				return
			}
			mw.banner.show(bannerSuccess, "Removed "+p.Name+" from Sandbar.")
			mw.reload()
		})
	})
}
