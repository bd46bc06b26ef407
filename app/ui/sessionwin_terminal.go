package ui

import (
	"context"
	"errors"
	"fmt"
	"io"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

const tabTerminal = "Terminal"

// terminalTerm is the TERM the shell gets: what the widget draws
// (fyne-io/terminal's own choice).
const terminalTerm = "xterm-256color"

// terminalPanel is the session window's Terminal tab: a shell in the
// session's VM, as `sandbar shell ID` gives, drawn by a terminal widget
// in the window, so it needs no terminal app. It opens when the tab is
// first shown while the session runs; New shell opens another once it
// has ended.
type terminalPanel struct {
	w       *sessionWindow
	view    *sbwidget.Terminal
	newBtn  *widget.Button
	root    *widget.Check
	note    *widget.Label
	content fyne.CanvasObject

	live   bool // the session runs
	busy   bool // a shell runs
	shown  bool // the tab has been shown: the first shell opens
	cancel context.CancelFunc
}

func newTerminalPanel(w *sessionWindow) *terminalPanel {
	p := &terminalPanel{w: w, view: sbwidget.NewTerminal(), note: widget.NewLabel("")}
	p.view.Post = w.post
	p.newBtn = widget.NewButtonWithIcon("New shell", theme.ContentAddIcon(), p.open)
	p.root = widget.NewCheck("As root", nil)
	p.note.Importance = widget.LowImportance
	p.note.Wrapping = fyne.TextWrapWord
	bar := container.NewBorder(nil, nil, nil, container.NewHBox(p.root, p.newBtn), p.note)
	p.content = container.NewBorder(bar, nil, nil, nil, p.view)
	p.setRunning(false)
	return p
}

// terminalIdleNote is said while the session does not run.
const terminalIdleNote = "A shell in the session's VM opens here while the session runs."

// setRunning follows the session's state: once the tab has been shown,
// a session that starts running again (Restart) gets a shell at once.
func (p *terminalPanel) setRunning(live bool) {
	again := live && !p.live && p.shown
	p.live = live
	p.refresh()
	if again {
		p.open()
	}
}

// refresh enables New shell while the session runs and no shell does.
func (p *terminalPanel) refresh() {
	switch {
	case p.busy:
		p.newBtn.Disable()
	case p.live:
		p.newBtn.Enable()
		if p.note.Text == terminalIdleNote {
			p.note.SetText("")
		}
	default:
		p.newBtn.Disable()
		p.note.SetText(terminalIdleNote)
	}
}

// showTab is called when the tab is shown: the first time, while the
// session runs, the shell opens.
func (p *terminalPanel) showTab() {
	first := !p.shown
	p.shown = true
	if first && p.live {
		p.open()
	}
	p.w.win.Canvas().Focus(p.view.Focusable())
}

// open starts a shell on the terminal, unless one runs.
func (p *terminalPanel) open() {
	if p.busy || !p.live || p.w.closed {
		return
	}
	p.busy = true
	p.newBtn.Disable()
	user := session.UserAgent
	if p.root.Checked {
		user = session.UserRoot
	}
	p.note.SetText("Shell in the VM as " + user + ", in /workspace. Type exit to end it.")
	ctx, cancel := context.WithCancel(p.w.ctx)
	p.cancel = cancel
	p.w.spawn(func(context.Context) {
		defer cancel()
		var res session.ExecResult
		err := p.view.Run(ctx, func(out io.Writer, rows, cols int) (sbwidget.TerminalConn, func() error, error) {
			req := session.ExecRequest{User: user, PTY: true, Term: terminalTerm,
				Rows: min(rows, session.MaxWinSize), Cols: min(cols, session.MaxWinSize)}
			t, err := p.w.u.Backend.Shell(ctx, p.w.id, req, out, out)
			if err != nil {
				return nil, nil, err
			}
			return t, func() (err error) { res, err = t.Wait(ctx); return err }, nil
		})
		p.w.ui(func() {
			p.busy, p.cancel = false, nil
			p.note.SetText(shellOutcome(res, err))
			p.refresh()
		})
	})
}

// shellOutcome says how a shell ended.
func shellOutcome(res session.ExecResult, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "The shell was closed."
	case err != nil:
		return "Could not open a shell: " + err.Error()
	case res.Signal != "":
		return fmt.Sprintf("The shell was killed by %s. New shell opens another.", res.Signal)
	case res.Code != 0:
		return fmt.Sprintf("The shell ended (exit code %d). New shell opens another.", res.Code)
	}
	return "The shell ended. New shell opens another."
}

func (p *terminalPanel) close() {
	if p.cancel != nil {
		p.cancel()
	}
}
