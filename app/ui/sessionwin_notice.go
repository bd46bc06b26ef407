package ui

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/store"
)

func setEnabled(b *widget.Button, on bool) {
	if on {
		b.Enable()
	} else {
		b.Disable()
	}
}

// stateDotColor is the dot beside a session's state: green working, amber
// waiting for the person or interrupted, blue on the way, red failed,
// grey stopped.
func stateDotColor(state store.State, activity string) color.Color {
	switch state {
	case session.StateRunning:
		if activity == session.ActivityWaiting || activity == session.ActivityRetrying || activity == session.ActivityPaused {
			return theme.Color(theme.ColorNameWarning)
		}
		return theme.Color(theme.ColorNameSuccess)
	case session.StateProvisioning, session.StateBooting, session.StateStopping:
		return theme.Color(theme.ColorNamePrimary)
	case session.StateFailed:
		return theme.Color(theme.ColorNameError)
	case session.StateInterrupted:
		return theme.Color(theme.ColorNameWarning)
	}
	return theme.Color(theme.ColorNameDisabled)
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listSome joins the first n of xs, saying how many more there are.
func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

func quoted(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// noticeBar is the window's inline message: what an action did, or a
// question with its answers (Delete anyway, Overwrite the branch).
type noticeBar struct {
	box     *fyne.Container
	msg     *widget.Label
	actions *fyne.Container
	shown   int // counts shows, so that a late result hides only its own
	// A success without actions goes by itself after life, hidden on the
	// UI goroutine through post; the rest stay until dismissed.
	life  time.Duration
	post  func(func())
	timer *time.Timer
}

// noticeAction is a button of a notice.
type noticeAction struct {
	label      string
	importance widget.Importance
	do         func()
}

func newNoticeBar() *noticeBar {
	n := &noticeBar{msg: widget.NewLabel(""), actions: container.NewHBox()}
	n.msg.Wrapping = fyne.TextWrapWord
	closeBtn := widget.NewButtonWithIcon("Dismiss", theme.CancelIcon(), nil)
	closeBtn.Importance = widget.LowImportance
	closeBtn.OnTapped = n.hide
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	body := container.NewBorder(nil, n.actions, nil, container.NewVBox(closeBtn), n.msg)
	n.box = container.NewStack(bg, container.NewPadded(body))
	n.box.Hide()
	return n
}

// show puts text in the notice with its actions and returns a number
// for hideIf.
func (n *noticeBar) show(imp widget.Importance, text string, actions ...noticeAction) int {
	n.shown++
	n.msg.Importance = imp
	n.msg.SetText(text)
	n.actions.RemoveAll()
	for _, a := range actions {
		b := widget.NewButton(a.label, a.do)
		b.Importance = a.importance
		n.actions.Add(b)
	}
	if len(actions) > 0 {
		n.actions.Show()
	} else {
		n.actions.Hide()
	}
	n.box.Show()
	n.box.Refresh()
	n.stopTimer()
	if imp == widget.SuccessImportance && len(actions) == 0 && n.life > 0 && n.post != nil {
		seq := n.shown
		n.timer = time.AfterFunc(n.life, func() { n.post(func() { n.hideIf(seq) }) })
	}
	return n.shown
}

func (n *noticeBar) stopTimer() {
	if n.timer != nil {
		n.timer.Stop()
		n.timer = nil
	}
}

func (n *noticeBar) hide() {
	n.stopTimer()
	n.box.Hide()
}

// hideIf hides the notice if it still shows what show number seq put
// there.
func (n *noticeBar) hideIf(seq int) {
	if n.shown == seq {
		n.hide()
	}
}

// text is the message shown, "" when hidden.
func (n *noticeBar) text() string {
	if !n.box.Visible() {
		return ""
	}
	return n.msg.Text
}

// button is the notice's button labelled label, nil if none.
func (n *noticeBar) button(label string) *widget.Button {
	if !n.box.Visible() {
		return nil
	}
	for _, o := range n.actions.Objects {
		if b, ok := o.(*widget.Button); ok && b.Text == label {
			return b
		}
	}
	return nil
}
