package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/data/binding"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/desktop"
	"sandbar/app/session"
)

// UI holds what every Sandbar window shares: the Fyne app, the session
// backend, the settings backend and the background work the windows
// start. main builds one with New, hands it to the tray, and calls Close
// before the app exits. The Show methods run on the UI goroutine.
type UI struct {
	App      fyne.App
	Backend  session.Service
	Settings SettingsBackend

	// OpenSession opens the window of one session; the session window
	// sets it. Nil means there is no such window and the windows do not
	// offer to open one. The windows, the tray and the notifications
	// call it through openSession.
	OpenSession func(id string)
	// Notice, when set before the Sandbar window first opens, is shown
	// in its banner: what a person should know about this run of the app
	// (that it is another engine's client, say).
	Notice string
	// ScreenSize, when set, says how big the screen is in Fyne's units:
	// windows open no bigger. Without it they are bounded by
	// maxWindowSize (see winframe.go).
	ScreenSize func() fyne.Size
	// ChooseFolder, when set, is the desktop's own folder chooser, which
	// Add Repository opens (see addrepo.go); nil means there is none and
	// Add a Repository, a typed path and recent folders, opens instead.
	ChooseFolder desktop.ChooseFolder
	// Home is the person's home folder: ~ in typed and shown paths.
	Home string

	// bannerLife is how long a success message stays up; sizeSaveDelay
	// how long a window's size must hold before it is remembered. Tests
	// shorten both.
	bannerLife    time.Duration
	sizeSaveDelay time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// post runs f on the UI goroutine: fyne.Do, or in tests a queue the
	// test goroutine drains, so that tests run under -race see the same
	// single UI goroutine the app has.
	post func(f func())

	mainWin     *mainWindow
	newSessWin  *newSessionWindow
	settingsWin *settingsWindow
	firstRunWin *firstRunWindow
	projectWins map[int64]*projectSettingsWindow
	sessionWins map[string]*sessionWindow // open session windows, by session id
	image       *imageBuild
	addRepo     addRepoState
	tray        *Tray // StartTray's, told when a session is opened
	// quitPolicy is the answer to the quit question ("" before one):
	// set on the UI goroutine before the app quits, read after its loop
	// ended (QuitPolicy).
	quitPolicy session.KeepPolicy
}

// New returns a UI over a, b and s, and gives a Sandbar's theme. s may be
// nil: Settings and the first run then show only what Backend can tell.
func New(a fyne.App, b session.Service, s SettingsBackend) *UI {
	ctx, cancel := context.WithCancel(context.Background())
	u := &UI{App: a, Backend: b, Settings: s, ctx: ctx, cancel: cancel, post: fyne.Do,
		bannerLife: successLife, sizeSaveDelay: sizeSaveDelay}
	a.Settings().SetTheme(Theme())
	u.image = newImageBuild(u)
	u.OpenSession = u.ShowSession
	return u
}

// Close stops the windows' background work (subscriptions, image builds,
// session starts still being validated) and waits for it to end. The
// windows stay as they are; closing them is the app's business.
func (u *UI) Close() {
	u.cancel()
	u.wg.Wait()
}

// openSession opens the window of session id (the Sandbar window where
// there is no session window) because the person asked to: from the
// tray, a notification, a row of the Sandbar window or New Session.
// Opening it is looking at it, so the tray stops counting it among the
// sessions that need the person.
func (u *UI) openSession(id string) {
	if u.tray != nil {
		u.tray.seen(id)
	}
	if u.OpenSession != nil {
		u.OpenSession(id)
		return
	}
	u.ShowMain()
}

// ShowMain shows the Sandbar window (projects and sessions), making it
// first if need be.
func (u *UI) ShowMain() {
	if u.mainWin == nil {
		u.mainWin = newMainWindow(u)
		u.mainWin.stop = u.goUntil(u.mainWin.follow)
		u.frameWindow(u.mainWin.win, winMain, mainWindowSize())
		u.mainWin.banner.hideSuccessAfter(u.bannerLife, u.post)
		if u.Notice != "" {
			u.mainWin.banner.show(bannerInfo, u.Notice)
		}
	}
	u.mainWin.win.Show()
	u.mainWin.win.RequestFocus()
}

// ShowNewSession shows the New Session window, with the project whose id
// is projectID selected (0: the most recently used one).
func (u *UI) ShowNewSession(projectID int64) {
	if u.newSessWin == nil {
		u.newSessWin = newNewSessionWindow(u)
		u.frameWindow(u.newSessWin.win, winNewSession, u.newSessWin.win.Canvas().Size())
	}
	u.newSessWin.selectProject(projectID)
	u.newSessWin.win.Show()
	u.newSessWin.win.RequestFocus()
	// The prompt is what a person types first: focused, no keystroke is
	// lost to a window with nothing focused.
	u.newSessWin.win.Canvas().Focus(u.newSessWin.prompt)
}

// ShowSettings shows the Settings window.
func (u *UI) ShowSettings() {
	if u.settingsWin == nil {
		u.settingsWin = newSettingsWindow(u)
		u.frameWindow(u.settingsWin.win, winSettings, fyne.NewSize(680, 560))
	} else {
		u.settingsWin.storageShown()
	}
	u.settingsWin.win.Show()
	u.settingsWin.win.RequestFocus()
	if u.settingsWin.tabs.SelectedIndex() == 0 {
		// Secrets: its first field, the name of a secret to add.
		u.settingsWin.win.Canvas().Focus(u.settingsWin.secretName)
	}
}

// ShowFirstRun shows the first-run window: doctor's checklist, the guest
// image build and the drop zone.
func (u *UI) ShowFirstRun() {
	if u.firstRunWin == nil {
		u.firstRunWin = newFirstRunWindow(u)
		u.frameWindow(u.firstRunWin.win, winFirstRun, fyne.NewSize(640, 620))
		u.firstRunWin.banner.hideSuccessAfter(u.bannerLife, u.post)
	}
	u.firstRunWin.win.Show()
	u.firstRunWin.win.RequestFocus()
}

// ShowStartup is what the app shows when it starts: the first-run window
// when there are no projects yet, else nothing (the tray is the app). It
// asks the backend off the UI goroutine.
func (u *UI) ShowStartup() {
	u.background(func(ctx context.Context) {
		if u.firstRunNeeded(ctx) {
			u.post(u.ShowFirstRun)
		}
	})
}

// firstRunNeeded reports whether there are no projects yet.
func (u *UI) firstRunNeeded(ctx context.Context) bool {
	ps, err := u.Backend.Projects(ctx)
	return err == nil && len(ps) == 0
}

// background runs f on its own goroutine, owned by u: Close cancels ctx
// and waits for f to return.
func (u *UI) background(f func(ctx context.Context)) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		f(u.ctx)
	}()
}

// goUntil runs f on its own goroutine with a context that ends when
// either Close is called or stop is (the owning window closed). It
// returns stop.
func (u *UI) goUntil(f func(ctx context.Context)) (stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(u.ctx)
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer cancel()
		f(ctx)
	}()
	return cancel
}

// humanDuration is an uptime as a glance wants it: 42s, 3m 04s, 1h 02m,
// 2d 03h.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %02dh", s/86400, s%86400/3600)
}

// successLife is how long a message saying that something worked stays
// up. Errors, and questions with answers, stay until dismissed.
const successLife = 6 * time.Second

// bannerKind is how a banner looks: information, success or a problem.
type bannerKind int

const (
	bannerInfo bannerKind = iota
	bannerSuccess
	bannerError
)

// banner is an inline, dismissable message at the top of a window: what
// a drop or an action did, or why it did not. It replaces dialogs for
// anything a person should read without being interrupted.
type banner struct {
	box  *fyne.Container
	icon *widget.Icon
	text *widget.Label
	// A success goes by itself after life (see hideSuccessAfter);
	// information and errors stay until dismissed.
	life  time.Duration
	post  func(func())
	timer *time.Timer
	shown int // counts shows, so that a late timer hides only its own
	// action is the message's one button (Undo), shown by showAction
	// and hidden by every other show.
	action *widget.Button
}

func newBanner() *banner {
	b := &banner{icon: widget.NewIcon(theme.InfoIcon()), text: widget.NewLabel("")}
	b.text.Wrapping = fyne.TextWrapWord
	closeBtn := widget.NewButtonWithIcon("Dismiss", theme.CancelIcon(), b.hide)
	closeBtn.Importance = widget.LowImportance
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	b.action = widget.NewButton("Undo", nil)
	b.action.Hide()
	b.box = container.NewStack(bg, container.NewBorder(nil, nil, container.NewCenter(b.icon), container.NewCenter(container.NewHBox(b.action, closeBtn)), b.text))
	b.box.Hide()
	return b
}

// show puts msg in the banner; an empty msg hides it.
func (b *banner) show(kind bannerKind, msg string) {
	if msg == "" {
		b.hide()
		return
	}
	switch kind {
	case bannerError:
		b.icon.SetResource(theme.ErrorIcon())
		b.text.Importance = widget.DangerImportance
	case bannerSuccess:
		b.icon.SetResource(theme.ConfirmIcon())
		b.text.Importance = widget.SuccessImportance
	default:
		b.icon.SetResource(theme.InfoIcon())
		b.text.Importance = widget.MediumImportance
	}
	b.text.SetText(msg)
	b.action.Hide()
	b.box.Show()
	b.shown++
	b.stopTimer()
	if kind == bannerSuccess && b.life > 0 && b.post != nil {
		seq := b.shown
		b.timer = time.AfterFunc(b.life, func() {
			b.post(func() {
				if b.shown == seq {
					b.hide()
				}
			})
		})
	}
}

// hideSuccessAfter makes a success message go after life, hidden on the
// UI goroutine through post.
func (b *banner) hideSuccessAfter(life time.Duration, post func(func())) {
	b.life, b.post = life, post
}

func (b *banner) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}

func (b *banner) hide() {
	b.stopTimer()
	b.text.SetText("")
	b.box.Hide()
}

// vcenter centres o vertically in the height it is given, leaving it the
// whole width (so a truncating label keeps its room).
func vcenter(o fyne.CanvasObject) fyne.CanvasObject {
	return container.NewVBox(layout.NewSpacer(), o, layout.NewSpacer())
}

// columns lays its objects out in one row, each given its weight's share
// of the width: a table's row and its header share one so they line up.
type columns []float32

func (c columns) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var w, h float32
	for _, o := range objects {
		if !o.Visible() {
			continue
		}
		ms := o.MinSize()
		w += ms.Width
		h = max(h, ms.Height)
	}
	return fyne.NewSize(w+theme.Padding()*float32(max(len(objects)-1, 0)), h)
}

func (c columns) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	var total float32
	for i := range objects {
		total += c.weight(i)
	}
	pad := theme.Padding()
	free := size.Width - pad*float32(max(len(objects)-1, 0))
	x := float32(0)
	for i, o := range objects {
		w := free * c.weight(i) / total
		o.Move(fyne.NewPos(x, 0))
		o.Resize(fyne.NewSize(w, size.Height))
		x += w + pad
	}
}

func (c columns) weight(i int) float32 {
	if i < len(c) {
		return c[i]
	}
	return 1
}

// unbinder remembers what a window bound to data that outlives it (the
// shared image build), so closing the window lets go of it.
type unbinder []func()

// listen calls f on the UI goroutine now and whenever d changes.
func (ub *unbinder) listen(d binding.DataItem, f func()) {
	l := binding.NewDataListener(f)
	d.AddListener(l)
	*ub = append(*ub, func() { d.RemoveListener(l) })
}

// label is a label showing s.
func (ub *unbinder) label(s binding.String) *widget.Label {
	l := widget.NewLabelWithData(s)
	*ub = append(*ub, l.Unbind)
	return l
}

func (ub *unbinder) release() {
	for _, f := range *ub {
		f()
	}
	*ub = nil
}
