package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	sbwidget "sandbar/app/ui/widget"
)

// execConsoleLines is how much output the exec console keeps.
const execConsoleLines = 5000

// execConsole is the session window's Exec tab: a command line run in
// the session's VM with sh -c, its output streamed as it comes, and a
// Cancel that kills it.
type execConsole struct {
	w      *sessionWindow
	entry  *entry
	run    *widget.Button
	stop   *widget.Button
	clear  *widget.Button
	root   *widget.Check
	out    *sbwidget.LogView
	status *widget.Label

	live    bool // the session runs
	busy    bool // a command runs
	cancel  context.CancelFunc
	history []string
	content fyne.CanvasObject
}

func newExecConsole(w *sessionWindow) *execConsole {
	e := &execConsole{w: w, entry: newEntry(), out: sbwidget.NewLogView(execConsoleLines, ""), status: widget.NewLabel("")}
	e.out.Post = w.post
	e.entry.SetPlaceHolder("Command to run in the VM, e.g. git status (Enter runs it)")
	e.entry.OnSubmitted = func(string) { e.runCommand() }
	e.run = widget.NewButtonWithIcon("Run", theme.MediaPlayIcon(), e.runCommand)
	e.run.Importance = widget.HighImportance
	e.stop = widget.NewButtonWithIcon("Cancel", theme.MediaStopIcon(), e.cancelCommand)
	e.stop.Disable()
	e.clear = widget.NewButtonWithIcon("Clear", theme.ContentClearIcon(), func() { e.out.Clear() })
	e.root = widget.NewCheck("As root", nil)
	e.status.Importance = widget.LowImportance
	e.status.Wrapping = fyne.TextWrapWord
	bar := container.NewBorder(nil, nil, nil, container.NewHBox(e.root, e.run, e.stop, e.clear), e.entry)
	e.content = container.NewBorder(bar, e.status, nil, nil, e.out)
	e.setRunning(false)
	return e
}

// setRunning enables the console while the session runs.
func (e *execConsole) setRunning(live bool) {
	e.live = live
	switch {
	case e.busy:
	case live:
		e.entry.Enable()
		e.run.Enable()
		if e.status.Text == execIdleNote {
			e.status.SetText("")
		}
	default:
		e.entry.Disable()
		e.run.Disable()
		e.status.SetText(execIdleNote)
	}
}

const execIdleNote = "Commands run in the session's VM while it runs."

// runCommand runs the entry's command line.
func (e *execConsole) runCommand() {
	line := e.entry.Text
	if line == "" || e.busy || !e.live || e.w.closed {
		return
	}
	e.busy = true
	e.history = append(e.history, line)
	e.entry.SetText("")
	e.run.Disable()
	e.stop.Enable()
	e.status.SetText("Running…")
	req := session.ExecRequest{Argv: []string{"sh", "-c", line}}
	if e.root.Checked {
		req.User = session.UserRoot
	}
	e.out.Append(sbwidget.LogLine{Stream: "exec", Time: time.Now(), Text: "$ " + line})
	ctx, cancel := context.WithCancel(e.w.ctx)
	e.cancel = cancel
	e.w.spawn(func(context.Context) {
		defer cancel()
		stdout := &lineWriter{stream: "stdout", out: e.out}
		stderr := &lineWriter{stream: "stderr", out: e.out}
		start := time.Now()
		res, err := e.w.u.Backend.Exec(ctx, e.w.id, req, stdout, stderr)
		stdout.Flush()
		stderr.Flush()
		took := sbwidget.RoundDuration(time.Since(start))
		e.w.ui(func() {
			e.busy = false
			e.cancel = nil
			e.stop.Disable()
			e.setRunning(e.live)
			e.status.SetText(execOutcome(res, err, took))
		})
	})
}

// execOutcome says how a command ended.
func execOutcome(res session.ExecResult, err error, took time.Duration) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "Cancelled after " + took.String() + "."
	case err != nil:
		return "Could not run it: " + err.Error()
	case res.TimedOut:
		return "Timed out after " + took.String() + "."
	case res.Signal != "":
		return fmt.Sprintf("Killed by %s after %s.", res.Signal, took)
	}
	if res.Code == 0 {
		return fmt.Sprintf("Done in %s.", took)
	}
	return fmt.Sprintf("Failed after %s (exit code %d).", took, res.Code)
}

// cancelCommand kills the running command.
func (e *execConsole) cancelCommand() {
	if e.cancel != nil {
		e.cancel()
		e.status.SetText("Cancelling…")
	}
}

func (e *execConsole) close() {
	if e.cancel != nil {
		e.cancel()
	}
	e.out.Close()
}

// lineWriter turns a command's output into log lines of one stream.
type lineWriter struct {
	mu     sync.Mutex
	stream string
	out    *sbwidget.LogView
	buf    []byte
}

// lineWriterMax bounds a line without a newline: longer, it is shown in
// pieces.
const lineWriterMax = 64 << 10

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	rest := l.buf
	var lines []sbwidget.LogLine
	now := time.Now()
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, sbwidget.LogLine{Stream: l.stream, Time: now, Text: string(rest[:i])})
		rest = rest[i+1:]
	}
	if len(rest) > lineWriterMax {
		lines = append(lines, sbwidget.LogLine{Stream: l.stream, Time: now, Text: string(rest)})
		rest = nil
	}
	l.buf = append(l.buf[:0], rest...)
	l.out.Append(lines...)
	return len(p), nil
}

// Flush shows what is left of an unfinished last line.
func (l *lineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.out.Append(sbwidget.LogLine{Stream: l.stream, Time: time.Now(), Text: string(l.buf)})
		l.buf = l.buf[:0]
	}
}
