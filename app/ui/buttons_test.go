package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// iconOnly lists the buttons in o that show an icon and no words, but
// for the drop-down arrow of Fyne's SelectEntry, a part of that widget
// everyone knows, and icons that say what they do on hover (hintButton).
func iconOnly(o fyne.CanvasObject) []*widget.Button {
	var out []*widget.Button
	for _, x := range test.LaidOutObjects(o) {
		b, ok := x.(*widget.Button)
		if hb, isHint := x.(*hintButton); isHint {
			if hb.hint != "" && hb.show != nil {
				continue
			}
			b, ok = &hb.Button, true
		}
		if ok && b.Text == "" && (b.Icon == nil || b.Icon.Name() != theme.MenuDropDownIcon().Name()) {
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
	h.q.WaitFor(t, 5*time.Second, "the project's row", func() bool { return shows(mw.win, "buttons") })
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

// TestRowActionsSayWhatTheyDo: a session row's actions are icons (words
// would leave its title no room), and each says what it does in the
// row's second line while the pointer is over it, giving the line back
// when the pointer leaves; the window then has no icon that says nothing.
func TestRowActionsSayWhatTheyDo(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "hints")
	mw := h.mainWindow(t)
	s, err := h.env.Manager.Start(context.Background(), session.Options{Project: p.Name, MemoryMiB: 512, Agent: sessiontest.Shell("sleep 60"), Prompt: "Hover me"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.env.Manager.Stop(context.Background(), s.ID) })
	var row *sessionItem
	h.q.WaitFor(t, 20*time.Second, "the session's row", func() bool { row = rowOf(mw, s.ID); return row != nil })
	line := row.detail.Text
	if !strings.HasPrefix(line, "hints · "+s.Branch) {
		t.Fatalf("the row's second line is %q", line)
	}
	for _, b := range []*hintButton{row.actions.open, row.actions.stop, row.actions.merge, row.actions.del} {
		b.MouseIn(&desktop.MouseEvent{})
		if row.detail.Text != b.hint || b.hint == "" {
			t.Errorf("over the %s icon the row says %q, want %q", b.Icon.Name(), row.detail.Text, b.hint)
		}
		b.MouseOut()
		if row.detail.Text != line {
			t.Errorf("after the %s icon the row says %q, want %q back", b.Icon.Name(), row.detail.Text, line)
		}
	}
	if !strings.HasPrefix(row.actions.del.hint, "Delete: move it to the trash") {
		t.Errorf("Delete's hint %q does not say it goes to the trash", row.actions.del.hint)
	}
	if bs := iconOnly(mw.win.Canvas().Content()); len(bs) > 0 {
		t.Errorf("the Sandbar window with a session has %d icons that say nothing (%s)", len(bs), bs[0].Icon.Name())
	}
}
