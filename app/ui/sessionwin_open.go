package ui

import (
	"os"
	"os/exec"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// opener is a way to open a session's workspace in another app.
type opener struct {
	label string
	icon  fyne.Resource
	argv  []string // the command; empty when unavailable
	dir   string   // its working directory
	// missing says why it is unavailable, "" when it is available.
	missing string
	// vm: it opens into the session's VM (sandbar shell), not the
	// workspace folder, so it needs the session running.
	vm bool
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// appleScriptString quotes s as an AppleScript string literal.
func appleScriptString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// lookPath finds a command on PATH.
func lookPath(name string) (string, error) { return exec.LookPath(name) }

// editorArgv splits $VISUAL or $EDITOR, which may hold arguments
// ("code -w"), and appends the folder.
func editorArgv(v, dir string) []string {
	return append(strings.Fields(v), dir)
}

// openerButton is the window's button for one opener.
type openerButton struct {
	o   opener
	btn *widget.Button
}

func newOpenerButton(w *sessionWindow, o opener) *openerButton {
	ob := &openerButton{o: o}
	ob.btn = widget.NewButtonWithIcon(o.label, o.icon, func() { w.launch(ob.o) })
	if o.missing != "" {
		ob.btn.Disable()
	}
	return ob
}

// showOpenNote says which openers are unavailable and why, in place of
// a tooltip (Fyne has none), and disables those whose workspace is not
// there.
func (w *sessionWindow) showOpenNote() {
	ws := w.workspace()
	var notes []string
	gone := ""
	switch {
	case ws == "":
		gone = "this Sandbar backend does not say where the workspace is"
	default:
		if _, err := os.Stat(ws); err != nil {
			gone = "the workspace is not there yet (it is cloned first)"
			if !os.IsNotExist(err) {
				gone = err.Error()
			}
		}
	}
	for _, b := range w.openers {
		if b.o.vm && b.o.missing == "" {
			setEnabled(b.btn, w.running)
			continue
		}
		if b.o.missing != "" {
			notes = append(notes, b.o.label+": "+b.o.missing)
			b.btn.Disable()
			continue
		}
		setEnabled(b.btn, gone == "")
	}
	if gone != "" {
		notes = append([]string{"Cannot open: " + gone}, notes...)
	}
	if len(notes) == 0 {
		w.openMsg.SetText(ws)
	} else {
		w.openMsg.SetText(strings.Join(notes, " · "))
	}
}

// launch starts o; its errors show in the notice.
func (w *sessionWindow) launch(o opener) {
	if len(o.argv) == 0 {
		return
	}
	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Dir = o.dir
	start := w.launcher
	if start == nil {
		start = startDetached
	}
	if err := start(cmd); err != nil {
		w.notice.show(widget.DangerImportance, "Could not open "+o.label+": "+err.Error())
	}
}

// startDetached starts cmd in its own session, so the app it opens
// outlives Sandbar, and reaps it when it exits.
func startDetached(cmd *exec.Cmd) error {
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	// The app belongs to the person: this goroutine only reaps it.
	go cmd.Wait()
	return nil
}
