package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"github.com/godbus/dbus/v5"

	"sandbar/app/desktop"
	"sandbar/app/desktop/desktoptest"
)

// addRepoHarness is a Sandbar UI whose home folder holds a repository
// (~/repos/shop) and a folder that is none (~/repos/notes).
type addRepoHarness struct {
	*appHarness
	home, repo, plain string
}

func newAddRepoHarness(t *testing.T) *addRepoHarness {
	h := newAppHarness(t)
	repo := h.env.Repo(t, "shop")
	home := filepath.Dir(filepath.Dir(repo))
	plain := filepath.Join(home, "repos", "notes")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	h.u.Home = home
	return &addRepoHarness{appHarness: h, home: home, repo: repo, plain: plain}
}

// chooser is a desktop chooser that answers path or err, counting calls.
func chooser(path string, err error, calls *atomic.Int32) desktop.ChooseFolder {
	return func(context.Context, string) (string, error) {
		calls.Add(1)
		return path, err
	}
}

// Each way of giving a folder words the fix its own way.
func TestAddRepositoryErrorsFitTheRoute(t *testing.T) {
	h := newAddRepoHarness(t)
	mw := h.mainWindow(t)

	// The desktop's chooser.
	var calls atomic.Int32
	h.u.ChooseFolder = chooser(h.plain, nil, &calls)
	mw.u.AddRepository(mw.added)
	h.q.WaitFor(t, 5*time.Second, "the chooser's refusal in the banner", func() bool { return mw.banner.text.Text != "" })
	if want := "~/repos/notes is not a git repository: choose the folder that holds .git, or run git init there."; mw.banner.text.Text != want {
		t.Errorf("after the chooser, banner = %q\nwant %q", mw.banner.text.Text, want)
	}

	// A drop.
	mw.banner.hide()
	mw.dropped(nowhere, []fyne.URI{storage.NewFileURI(h.plain)})
	h.q.WaitFor(t, 5*time.Second, "the drop's refusal in the banner", func() bool { return mw.banner.text.Text != "" })
	if want := "~/repos/notes is not a git repository: drop the folder that holds .git, or run git init there."; mw.banner.text.Text != want {
		t.Errorf("after a drop, banner = %q\nwant %q", mw.banner.text.Text, want)
	}

	// A typed path: the refusal stays in Add a Repository, which stays
	// open to fix the path.
	mw.banner.hide()
	h.u.ShowAddByPath(mw.added, "")
	w := h.u.addRepo.win
	for _, tc := range []struct{ typed, want string }{
		{"~/repos/notes", "~/repos/notes is not a git repository: type the path of the folder that holds .git, or run git init there."},
		{"repos/gone", "~/repos/gone does not exist: check the path (its folders are listed as you type)."},
		{"~/repos/shop/README.md", "~/repos/shop/README.md is a file, not a folder: type the path of the repository's folder."},
		{"", "Type the path of a repository's folder, like ~/src/notes, or pick one below."},
	} {
		w.problem.Hide()
		test.Type(w.entry, "")
		w.entry.SetText(tc.typed)
		w.submit()
		h.q.WaitFor(t, 5*time.Second, "the refusal of "+tc.typed, func() bool { return w.problem.Visible() })
		if w.problem.Text != tc.want {
			t.Errorf("typed %q: problem = %q\nwant %q", tc.typed, w.problem.Text, tc.want)
		}
	}
	if mw.banner.text.Text != "" || !h.u.addRepo.win.win.Content().Visible() {
		t.Errorf("a typed path's refusal went to the Sandbar window (%q) or closed Add a Repository", mw.banner.text.Text)
	}

	// A good typed path adds the project, closes the window, and says so
	// where Add by Path was pressed.
	w.entry.SetText("~/repos/shop")
	w.submit()
	h.q.WaitFor(t, 5*time.Second, "the typed repository added", func() bool { return len(mw.projects) == 1 })
	h.q.WaitFor(t, 5*time.Second, "Add a Repository closed", func() bool { return h.u.addRepo.win == nil })
	if want := "Added shop (~/repos/shop, branch main)."; mw.banner.text.Text != want {
		t.Errorf("banner = %q, want %q", mw.banner.text.Text, want)
	}
}

// Without a chooser that answers, Add Repository opens Add a Repository
// and says why; a cancel does nothing at all.
func TestAddRepositoryFallsBack(t *testing.T) {
	h := newAddRepoHarness(t)
	mw := h.mainWindow(t)

	var calls atomic.Int32
	h.u.ChooseFolder = chooser("", desktop.ErrCanceled, &calls)
	mw.u.AddRepository(mw.added)
	h.q.WaitFor(t, 5*time.Second, "the chooser asked", func() bool { return calls.Load() == 1 && !h.u.addRepo.choosing })
	if h.u.addRepo.win != nil || mw.banner.text.Text != "" {
		t.Errorf("a cancelled chooser opened Add a Repository (%v) or said %q", h.u.addRepo.win != nil, mw.banner.text.Text)
	}

	// A real portal client on a real session bus where no portal runs.
	addr := desktoptest.Bus(t)
	h.u.ChooseFolder = desktop.Portal{Answer: 2 * time.Second, Connect: func(ctx context.Context) (*dbus.Conn, error) {
		return dbus.Connect(addr, dbus.WithContext(ctx))
	}}.ChooseFolder
	start := time.Now()
	mw.u.AddRepository(mw.added)
	h.q.WaitFor(t, 3*time.Second, "Add a Repository, shown when no portal answers", func() bool { return h.u.addRepo.win != nil })
	t.Logf("Add a Repository showed %s after the click, with no portal on the bus", time.Since(start).Round(time.Millisecond))
	w := h.u.addRepo.win
	if !w.why.Visible() || !strings.Contains(w.why.Text, "folder chooser did not answer") {
		t.Errorf("why = %q (visible %v), want it to say the chooser did not answer", w.why.Text, w.why.Visible())
	}
	if w.win.Title() != "Add a Repository" {
		t.Errorf("title %q", w.win.Title())
	}

	// Where there is no chooser at all it opens at once, without a why.
	w.win.Close()
	h.u.ChooseFolder = nil
	mw.u.AddRepository(mw.added)
	if h.u.addRepo.win == nil || h.u.addRepo.win.why.Visible() {
		t.Error("with no chooser, Add Repository did not open Add a Repository plainly")
	}
}

// Folders added and tried are remembered, newest first, and listed while
// nothing is typed; typing lists the folders that complete the path.
func TestAddRepositoryRecentAndCompletion(t *testing.T) {
	h := newAddRepoHarness(t)
	mw := h.mainWindow(t)
	other := h.env.Repo(t, "shelf")

	// Tried (refused), then added.
	h.u.addFolders(routeTyped, []string{h.plain}, mw.added)
	h.u.addFolders(routeDrop, []string{h.repo}, mw.added)
	h.q.WaitFor(t, 5*time.Second, "the project added", func() bool { return len(mw.projects) == 1 })
	h.q.WaitFor(t, 5*time.Second, "both folders remembered", func() bool { return len(h.u.recentFolders()) == 2 })
	if got := h.u.recentFolders(); got[0] != h.repo || got[1] != h.plain {
		t.Errorf("recent = %q, want the repository, then the folder tried", got)
	}
	for range maxRecentFolders + 3 {
		h.u.rememberFolder(other)
	}
	if got := h.u.recentFolders(); len(got) != 3 || got[0] != other {
		t.Errorf("recent after remembering one folder again and again = %q", got)
	}

	h.u.ShowAddByPath(mw.added, "")
	w := h.u.addRepo.win
	h.q.WaitFor(t, 5*time.Second, "recent folders listed", func() bool { return len(w.items) == 3 })
	if w.listed.Text != "Recent folders" {
		t.Errorf("heading %q", w.listed.Text)
	}
	if it := w.items[1]; it.path != h.repo || !it.project || !it.repo {
		t.Errorf("second recent item %+v, want the project", it)
	}

	// Completion: ~/repos/sh lists shelf and shop; picking a folder that
	// is no repository opens it.
	test.Type(w.entry, "~/repos/sh")
	h.q.WaitFor(t, 5*time.Second, "folders completing ~/repos/sh", func() bool {
		return len(w.items) == 2 && strings.HasPrefix(w.listed.Text, "Folders in ~/repos")
	})
	var names []string
	for _, it := range w.items {
		names = append(names, filepath.Base(it.path))
	}
	if !slices.Equal(names, []string{"shelf", "shop"}) {
		t.Errorf("completions %q", names)
	}
	w.list.Select(1)
	if w.entry.Text != "~/repos/shop" {
		t.Errorf("picking shop typed %q", w.entry.Text)
	}
	w.entry.SetText("~/re")
	h.q.WaitFor(t, 5*time.Second, "~/re completed", func() bool { return len(w.items) == 1 })
	w.list.Select(0)
	if w.entry.Text != "~/repos/" {
		t.Errorf("picking a folder that is no repository typed %q, want it opened", w.entry.Text)
	}
	h.q.WaitFor(t, 5*time.Second, "~/repos/ listed", func() bool { return len(w.items) == 3 })
}

func TestPathsWithTilde(t *testing.T) {
	for _, tc := range []struct{ typed, want string }{
		{"~", "/home/ann"},
		{"~/src/notes", "/home/ann/src/notes"},
		{"~/src/", "/home/ann/src/"},
		{"src/notes/", "/home/ann/src/notes/"},
		{" /srv/x ", "/srv/x"},
		{"", ""},
	} {
		if got := expandPath(tc.typed, "/home/ann"); got != tc.want {
			t.Errorf("expandPath(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
	if got := addProblem(routeDrop, "/x", "", errors.New("plain")); got != "Plain." {
		t.Errorf("a reason that does not depend on the route became %q", got)
	}
}

// Welcome has Add Repository… too: a chosen repository is its first
// project, and a chooser's answer it cannot use is said there.
func TestWelcomeAddRepository(t *testing.T) {
	h := newAddRepoHarness(t)
	var calls atomic.Int32
	h.u.ChooseFolder = func(context.Context, string) (string, error) {
		if calls.Add(1) == 1 {
			return "", errors.New("the chooser gave sftp://host/src, which is not a folder on this computer: choose a local folder")
		}
		return h.repo, nil
	}
	h.u.ShowFirstRun()
	w := h.u.firstRunWin
	tapButton(t, w.win, "Add Repository…")
	h.q.WaitFor(t, 5*time.Second, "the unusable answer said", func() bool { return w.banner.text.Text != "" })
	if want := "The chooser gave sftp://host/src, which is not a folder on this computer: choose a local folder."; w.banner.text.Text != want {
		t.Errorf("banner = %q, want %q", w.banner.text.Text, want)
	}
	if h.u.addRepo.win != nil {
		t.Error("an answer from the chooser opened Add a Repository as if there were none")
	}
	tapButton(t, w.win, "Add Repository…")
	h.q.WaitFor(t, 5*time.Second, "the chosen repository ready", func() bool { return len(w.projects) == 1 })
	if !sees(w.win, "shop is ready") {
		t.Errorf("Welcome shows %q, want shop ready", seenTexts(w.win.Canvas().Content()))
	}
}
