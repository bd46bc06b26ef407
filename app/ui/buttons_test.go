package ui

import (
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// iconOnly lists the buttons in o that show an icon and no words, but
// for the drop-down arrow of Fyne's SelectEntry, a part of that widget
// everyone knows.
func iconOnly(o fyne.CanvasObject) []*widget.Button {
	var out []*widget.Button
	for _, x := range test.LaidOutObjects(o) {
		if b, ok := x.(*widget.Button); ok && b.Text == "" && (b.Icon == nil || b.Icon.Name() != theme.MenuDropDownIcon().Name()) {
			out = append(out, b)
		}
	}
	return out
}

// TestNoIconOnlyButtons: Fyne 2.8 has no tooltips, so every button says
// what it does in words (the banner's close, a project row's Settings
// and Remove, Storage's Refresh, the log search's Previous and Next).
func TestNoIconOnlyButtons(t *testing.T) {
	h := newAppHarness(t)
	h.addProject(t, "buttons")
	mw := h.mainWindow(t)
	mw.banner.show(bannerInfo, "a banner")
	h.waitFor(t, 5*time.Second, "the project's row", func() bool { return shows(mw.win, "buttons") })
	if bs := iconOnly(mw.win.Canvas().Content()); len(bs) > 0 {
		t.Errorf("the Sandbar window has %d buttons with only an icon", len(bs))
	}
	sw := h.settings(t)
	for _, ti := range sw.tabs.Items {
		sw.tabs.Select(ti)
		// The tab's own content: the tab bar's overflow button ("…",
		// when the window is too narrow for every tab) is Fyne's.
		if bs := iconOnly(ti.Content); len(bs) > 0 {
			t.Errorf("Settings → %s has %d buttons with only an icon (%s)", ti.Text, len(bs), bs[0].Icon.Name())
		}
	}
}
