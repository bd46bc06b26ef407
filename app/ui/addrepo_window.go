package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/store"
)

// winAddRepo is the Add a Repository window's kind, for its remembered
// size.
const winAddRepo = "addrepo"

// maxFolderSuggestions bounds the folders listed as a path is typed.
const maxFolderSuggestions = 200

// folderItem is one folder Add a Repository lists.
type folderItem struct {
	path    string
	repo    bool // it holds .git
	project bool // it is a project already
}

// addRepoWindow is Add a Repository: a path typed (with ~, and the
// folders under what is typed listed as it is typed, to pick from), and
// the recent folders while nothing is typed. It is how a repository is
// added where the desktop has no folder chooser, and always reachable
// beside it.
type addRepoWindow struct {
	u      *UI
	win    fyne.Window
	report func(addResult)

	why     *widget.Label // why this shows instead of the desktop's chooser
	entry   *widget.Entry
	problem *widget.Label
	listed  *widget.Label // what the list holds
	list    *widget.List
	items   []folderItem
	add     *widget.Button
	choose  *widget.Button

	gen  int // the newest listing asked for; older ones are dropped
	busy bool
}

// ShowAddByPath shows Add a Repository; what it adds is handed to
// report. why, when not empty, says why it shows (the desktop's chooser
// did not answer).
func (u *UI) ShowAddByPath(report func(addResult), why string) {
	w := u.addRepo.win
	if w == nil {
		w = newAddRepoWindow(u)
		u.addRepo.win = w
		u.frameWindow(w.win, winAddRepo, fyne.NewSize(560, 460))
	}
	w.report = report
	w.why.SetText(why)
	w.why.Hidden = why == ""
	w.why.Refresh()
	w.win.Show()
	w.win.RequestFocus()
	w.win.Canvas().Focus(w.entry)
}

func newAddRepoWindow(u *UI) *addRepoWindow {
	w := &addRepoWindow{u: u, win: u.App.NewWindow("Add a Repository")}

	w.why = widget.NewLabel("")
	w.why.Wrapping = fyne.TextWrapWord
	w.why.Importance = widget.WarningImportance
	w.why.Hide()

	w.entry = widget.NewEntry()
	w.entry.SetPlaceHolder("~/src/my-repository")
	w.entry.OnChanged = func(string) { w.problem.Hide(); w.relist() }
	w.entry.OnSubmitted = func(string) { w.submit() }

	w.problem = widget.NewLabel("")
	w.problem.Wrapping = fyne.TextWrapWord
	w.problem.Importance = widget.DangerImportance
	w.problem.Hide()

	w.listed = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.list = widget.NewList(
		func() int { return len(w.items) },
		func() fyne.CanvasObject { return newFolderRow() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(w.items) {
				o.(*folderRow).set(w.items[i], u.Home)
			}
		})
	w.list.OnSelected = func(i widget.ListItemID) {
		w.list.UnselectAll()
		if i < len(w.items) {
			w.pick(w.items[i])
		}
	}

	w.add = widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), w.submit)
	w.add.Importance = widget.HighImportance
	cancel := widget.NewButton("Cancel", func() { w.win.Close() })
	// Choose Folder… asks the desktop's chooser; where there is none, or
	// it did not answer, it opens Fyne's folder browser in this window
	// (asking the chooser again reopened this same window).
	w.choose = widget.NewButtonWithIcon("Choose Folder…", theme.FolderOpenIcon(), func() {
		if u.ChooseFolder == nil || u.addRepo.noPortal {
			w.browse()
			return
		}
		report := w.report
		w.win.Close()
		u.AddRepository(report)
	})
	buttons := container.NewHBox(w.choose, layout.NewSpacer(), cancel, w.add)

	top := container.NewVBox(w.why,
		widget.NewLabelWithStyle("Repository folder", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		w.entry, w.problem, w.listed)
	w.win.SetContent(container.NewPadded(container.NewBorder(top, buttons, nil, nil, w.list)))
	w.win.SetOnClosed(func() {
		w.gen++ // a listing still running is dropped
		if u.addRepo.win == w {
			u.addRepo.win = nil
		}
	})
	w.relist()
	return w
}

// browse opens Sandbar's own folder browser, at the typed folder or the
// home folder; the folder chosen is added as though typed.
func (w *addRepoWindow) browse() {
	d := dialog.NewFolderOpen(w.browsed, w.win)
	start := strings.TrimSuffix(expandPath(w.entry.Text, w.u.Home), "/")
	if start == "" {
		start = w.u.Home
	}
	for dir := start; dir != "" && dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if l, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
			d.SetLocation(l)
			break
		}
	}
	d.Show()
	d.Resize(w.win.Canvas().Size()) // only once shown: before, it has no content to size
}

// browsed takes the folder browser's answer: a folder is added as though
// its path were typed (a refusal shows here, to fix); a cancel does
// nothing.
func (w *addRepoWindow) browsed(dir fyne.ListableURI, err error) {
	if err != nil {
		w.showProblem("The folder browser failed: " + sentence(err.Error()) + " Type the path instead.")
		return
	}
	if dir == nil {
		return
	}
	w.entry.SetText(tildePath(dir.Path(), w.u.Home))
	w.submit()
}

// pick takes a listed folder: a repository's path is ready to add; any
// other folder is opened, to list what it holds.
func (w *addRepoWindow) pick(it folderItem) {
	text := tildePath(it.path, w.u.Home)
	if !it.repo && !it.project {
		text = strings.TrimSuffix(text, "/") + "/"
	}
	w.entry.SetText(text)
	w.entry.CursorColumn = len([]rune(text))
	w.entry.Refresh()
	w.win.Canvas().Focus(w.entry)
}

// submit adds the typed folder.
func (w *addRepoWindow) submit() {
	if w.busy {
		return
	}
	path := strings.TrimSuffix(expandPath(w.entry.Text, w.u.Home), "/")
	if path == "" {
		w.showProblem("Type the path of a repository's folder, like ~/src/notes, or pick one below.")
		return
	}
	w.busy = true
	w.add.Disable()
	w.u.addFolders(routeTyped, []string{filepath.Clean(path)}, func(r addResult) {
		w.busy = false
		w.add.Enable()
		if len(r.added) == 0 {
			w.showProblem(r.message(w.u.Home))
			w.relist()
			return
		}
		w.win.Close()
		if w.report != nil {
			w.report(r)
		}
	})
}

func (w *addRepoWindow) showProblem(msg string) {
	w.problem.SetText(msg)
	w.problem.Show()
}

// relist lists, off the UI goroutine, the folders under what is typed,
// or the recent ones while nothing is.
func (w *addRepoWindow) relist() {
	w.gen++
	gen := w.gen
	typed := w.entry.Text
	home := w.u.Home
	recent := w.u.recentFolders()
	w.u.background(func(ctx context.Context) {
		projects, _ := w.u.Backend.Projects(ctx)
		var heading string
		var items []folderItem
		if strings.TrimSpace(typed) == "" {
			heading, items = "Recent folders", recentItems(recent, projects)
			if len(items) == 0 {
				heading, items = "Folders in your home folder", folderSuggestions(home+"/", home, projects)
			}
		} else {
			full := expandPath(typed, home)
			dir := full
			if !strings.HasSuffix(full, "/") {
				dir = filepath.Dir(full)
			}
			heading = "Folders in " + tildePath(strings.TrimSuffix(dir, "/"), home)
			if dir == "/" {
				heading = "Folders in /"
			}
			items = folderSuggestions(full, home, projects)
		}
		w.u.post(func() {
			if gen != w.gen {
				return
			}
			w.items = items
			if len(items) == 0 && heading != "Recent folders" {
				heading += ": none match"
			}
			w.listed.SetText(heading)
			w.list.Refresh()
		})
	})
}

// recentItems are the recent folders that still exist.
func recentItems(recent []string, projects []store.Project) []folderItem {
	var items []folderItem
	for _, p := range recent {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			items = append(items, folderItem{path: p, repo: holdsGit(p), project: knownProject(projects, p)})
		}
	}
	return items
}

// folderSuggestions are the folders that complete typed (already
// expanded): those in its folder whose names start with its last
// element, ignoring case; hidden ones only when a dot is typed.
func folderSuggestions(typed, home string, projects []store.Project) []folderItem {
	if typed == "" {
		return nil
	}
	dir, prefix := typed, ""
	if !strings.HasSuffix(typed, "/") {
		dir, prefix = filepath.Dir(typed), filepath.Base(typed)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var items []folderItem
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".") {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(name), strings.ToLower(prefix)) {
			continue
		}
		p := filepath.Join(dir, name)
		if !e.IsDir() {
			// A link to a folder is a folder to a person.
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
		}
		items = append(items, folderItem{path: p, repo: holdsGit(p), project: knownProject(projects, p)})
		if len(items) == maxFolderSuggestions {
			break
		}
	}
	slices.SortFunc(items, func(a, b folderItem) int {
		return strings.Compare(strings.ToLower(filepath.Base(a.path)), strings.ToLower(filepath.Base(b.path)))
	})
	return items
}

// holdsGit reports whether dir holds a .git (a folder, or a file in a
// linked work tree).
func holdsGit(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}

// folderRow is one listed folder: an icon, its name, its path, and what
// it is.
type folderRow struct {
	widget.BaseWidget
	icon *widget.Icon
	name *widget.Label
	path *widget.Label
	tag  *widget.Label
}

func newFolderRow() *folderRow {
	r := &folderRow{icon: widget.NewIcon(theme.FolderIcon()),
		name: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		path: widget.NewLabel(""), tag: widget.NewLabel("")}
	r.path.Truncation = fyne.TextTruncateEllipsis
	r.tag.Importance = widget.SuccessImportance
	r.ExtendBaseWidget(r)
	return r
}

func (r *folderRow) set(it folderItem, home string) {
	r.name.SetText(filepath.Base(it.path))
	r.path.SetText(tildePath(it.path, home))
	switch {
	case it.project:
		r.tag.SetText("added")
	case it.repo:
		r.tag.SetText("repository")
	default:
		r.tag.SetText("")
	}
}

func (r *folderRow) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(container.NewBorder(nil, nil, container.NewHBox(r.icon, r.name), r.tag, r.path))
}
