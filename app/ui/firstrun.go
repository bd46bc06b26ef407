package ui

import (
	"context"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/doctor"
	"sandbar/app/store"
)

// firstRunWindow welcomes a person: doctor's checks as a checklist with
// their fixes, the guest image build when there is no image, the
// Anthropic key, then a drop zone for the first repository, which gives
// way to the way on (New Session) once a project exists.
type firstRunWindow struct {
	u      *UI
	win    fyne.Window
	banner *banner
	ub     unbinder
	key    *keyStep

	drop      fyne.CanvasObject // shown while there is no project
	ready     *fyne.Container   // shown once there is one
	readyText *widget.Label
	readyHint *widget.Label
	newSess   *widget.Button
	projects  []store.Project
	stopWatch context.CancelFunc

	checking  *fyne.Container // shown while the checks run
	checklist *fyne.Container
	recheck   *widget.Button
	imageBox  *fyne.Container // shown when no image is built
	build     *widget.Button
	open      *widget.Button

	checks []doctor.Check
}

func newFirstRunWindow(u *UI) *firstRunWindow {
	w := &firstRunWindow{u: u, win: u.App.NewWindow("Welcome to Sandbar"), banner: newBanner()}

	title := widget.NewLabelWithStyle("Welcome to Sandbar", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameHeadingText
	intro := note("Sandbar runs each coding agent in its own small VM, on its own clone of your repository. First, a look at what this machine has:")

	activity := widget.NewActivity()
	activity.Start()
	w.checking = container.NewHBox(activity, widget.NewLabel("Checking this machine…"))
	w.checklist = container.NewVBox()
	w.recheck = widget.NewButtonWithIcon("Check again", theme.ViewRefreshIcon(), w.runChecks)

	b := u.image
	w.build = widget.NewButtonWithIcon("Build the guest image", theme.DownloadIcon(), b.start)
	w.build.Importance = widget.HighImportance
	if u.Settings == nil {
		w.build.Disable()
	}
	w.imageBox = container.NewVBox(widget.NewSeparator(), heading("Guest image"),
		note("Sessions boot a small Debian guest built on this machine (about a minute; downloads ~250 MB once, then works offline)."),
		container.NewHBox(w.build), imageProgress(b, &w.ub))
	w.imageBox.Hide()
	w.ub.listen(b.missing, func() {
		if missing, _ := b.missing.Get(); missing {
			w.imageBox.Show()
		} else if running, _ := b.running.Get(); !running {
			w.imageBox.Hide()
		}
	})
	wasRunning := false
	w.ub.listen(b.running, func() {
		running, _ := b.running.Get()
		if running {
			w.build.Disable()
		} else if u.Settings != nil {
			w.build.Enable()
		}
		if wasRunning && !running {
			w.runChecks() // the image check's verdict changed
		}
		wasRunning = running
	})

	w.key = newKeyStep(u)

	w.drop = dropZone("Drop a repository folder here", "It becomes a project: then press Start on it to run an agent.")
	w.open = widget.NewButtonWithIcon("Open Sandbar", theme.HomeIcon(), func() {
		u.ShowMain()
		w.win.Close()
	})
	w.open.Importance = widget.HighImportance
	w.newReady()

	checks := container.NewVBox(w.checking, w.checklist, container.NewHBox(layout.NewSpacer(), w.recheck))
	content := container.NewVBox(title, intro, checks, w.imageBox, widget.NewSeparator(), w.key.box,
		widget.NewSeparator(), w.drop, w.ready, container.NewHBox(w.addButton(), layout.NewSpacer(), w.newSess, w.open))
	w.win.SetContent(container.NewBorder(w.banner.box, nil, nil, nil, container.NewVScroll(container.NewPadded(content))))
	w.win.Resize(fyne.NewSize(640, 620))
	w.win.SetOnDropped(w.dropped)
	w.win.SetOnClosed(func() {
		w.stopWatch()
		w.ub.release()
		if u.firstRunWin == w {
			u.firstRunWin = nil
		}
	})
	b.refresh()
	w.runChecks()
	w.key.load()
	w.stopWatch = u.goUntil(w.watchProjects)
	return w
}

// runChecks runs doctor's checks off the UI goroutine.
func (w *firstRunWindow) runChecks() {
	s := w.u.Settings
	if s == nil {
		w.showChecks(nil)
		return
	}
	w.checking.Show()
	w.recheck.Disable()
	w.u.background(func(ctx context.Context) {
		checks := s.DoctorChecks(ctx)
		w.u.post(func() { w.showChecks(checks) })
	})
}

// showChecks lays out the checklist: a mark, the check's name and what
// it found, and the fix where there is one.
func (w *firstRunWindow) showChecks(checks []doctor.Check) {
	w.checks = checks
	w.checking.Hide()
	w.recheck.Enable()
	var rows []fyne.CanvasObject
	for _, c := range checks {
		mark := widget.NewIcon(checkIcon(c))
		// A check with a summary says it plainly; the raw findings
		// (a QEMU assertion, say) wait behind Details.
		said := c.Detail
		if c.Summary != "" {
			said = c.Summary
		}
		segs := []widget.RichTextSegment{
			&widget.TextSegment{Text: c.Name, Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Bold: true}}},
			&widget.TextSegment{Text: said, Style: widget.RichTextStyleParagraph},
		}
		if c.Fix != "" && (!c.OK || c.Warn) {
			fix := widget.RichTextStyleParagraph
			fix.ColorName = theme.ColorNamePlaceHolder
			segs = append(segs, &widget.TextSegment{Text: "Fix: " + c.Fix, Style: fix})
		}
		text := widget.NewRichText(segs...)
		text.Wrapping = fyne.TextWrapWord
		var body fyne.CanvasObject = text
		if c.Summary != "" {
			body = container.NewVBox(text, checkDetails(c.Detail))
		}
		markBox := container.NewGridWrap(fyne.NewSquareSize(theme.IconInlineSize()+theme.Padding()), mark)
		rows = append(rows, container.NewBorder(nil, nil, container.NewVBox(markBox), nil, body))
	}
	if len(checks) == 0 {
		rows = append(rows, note("No checks are available here; run `sandbar doctor` in a terminal."))
	}
	w.checklist.Objects = rows
	w.checklist.Refresh()
}

// dropped adds each dropped folder as a project; after the first one,
// the window changes to the way on (New Session).
func (w *firstRunWindow) dropped(_ fyne.Position, uris []fyne.URI) {
	w.u.addProjects(uris, w.added)
}

// added shows what adding folders (dropped or chosen) did.
func (w *firstRunWindow) added(r addResult) {
	if len(r.added) > 0 {
		w.setProjects(append(slices.Clone(r.added), w.projects...))
		if w.u.mainWin != nil {
			w.u.mainWin.reload()
		}
	}
	w.banner.show(r.kind(), r.message(w.u.Home))
}

// checkIcon is a check's mark: an icon, as the doctor's ✓ and ✗ are in
// none of the theme's fonts (they drew as the system had them, or as
// boxes).
func checkIcon(c doctor.Check) fyne.Resource {
	switch {
	case !c.OK:
		return theme.NewErrorThemedResource(theme.CancelIcon())
	case c.Warn:
		return theme.NewWarningThemedResource(theme.WarningIcon())
	}
	return theme.NewSuccessThemedResource(theme.ConfirmIcon())
}
