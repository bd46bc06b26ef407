package ui

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
)

// opener is a way to open a session's files in another app.
type opener struct {
	label string
	icon  fyne.Resource
	argv  []string // the command; empty when unavailable
	dir   string   // its working directory
	// missing says why it is unavailable, "" when it is available.
	missing string
	// export: it opens the session's read-only export, written (or
	// refreshed) by Service.Export before the command starts, which says
	// where; argv and dir are made for that folder then.
	export bool
	// vm: it opens into the session's VM (sandbar shell), not the
	// workspace folder, so it needs the session running.
	vm bool
	// noApp, for an export opener, says what to install when no app can
	// open a folder here (argv empty): pressing it still writes the copy,
	// and the notice gives its path to copy. It is also said, with the
	// path, when the command exits with an error at once (xdg-open with
	// no file manager to hand the folder to).
	noApp string
	// url, for a web address's opener: failing at once (no browser), it
	// offers to copy the address instead.
	url string
}

// urlOpener opens a web address in the person's browser, with the
// desktop's opener for files (open, xdg-open), which takes an address
// as well.
func urlOpener(url string, look func(string) (string, error)) opener {
	o := fileOpener(url, look)
	o.label, o.dir, o.url = url, "", url
	o.noApp = "no browser is set up to open it"
	return o
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
// a tooltip (Fyne has none), and what the others open: a read-only copy
// of the session's files, never the agent's own, which live in its VM.
func (w *sessionWindow) showOpenNote() {
	var notes []string
	gone := ""
	if w.sess.State == session.StateProvisioning {
		gone = "the session's workspace is being made"
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
	what := "These open a read-only copy of the session's files, made when you press one; the agent's own files live in its VM."
	if w.exportDir != "" {
		when := "its last save"
		if !w.exported.IsZero() {
			when = w.exported.Format("Jan 2 15:04:05")
		}
		what = "Read-only copy of the session's files as of " + when + ", in " + tildePath(w.exportDir, w.u.Home) + ": the agent's own files live in its VM."
	}
	w.openMsg.SetText(strings.Join(append([]string{what}, notes...), " · "))
}

// launch starts o, after writing the read-only export it opens; errors
// show in the notice.
func (w *sessionWindow) launch(o opener) {
	if o.missing != "" {
		return
	}
	if !o.export {
		if len(o.argv) == 0 {
			return
		}
		w.startOpener(o)
		return
	}
	w.spawn(func(ctx context.Context) {
		dir, when, err := w.u.Backend.Export(ctx, w.id)
		if ctx.Err() != nil {
			return
		}
		w.ui(func() {
			if err != nil {
				w.notice.show(widget.DangerImportance, "Could not make the read-only copy for "+o.label+": "+err.Error())
				return
			}
			// The backend says where it put the copy: the opener is made
			// for that folder.
			for _, n := range w.exportOpeners(dir) {
				if n.label == o.label {
					o.argv, o.dir = n.argv, n.dir
				}
			}
			if o.noApp != "" && len(o.argv) == 0 {
				w.exported, w.exportDir = when, dir
				w.showOpenNote()
				w.noFolderApp(o, dir, "Nothing here can open a folder")
				return
			}
			if len(o.argv) == 0 || o.dir != dir {
				w.notice.show(widget.DangerImportance, "Could not open "+o.label+" on the read-only copy in "+dir)
				return
			}
			w.exported, w.exportDir = when, dir
			w.showOpenNote()
			w.startOpener(o)
		})
	})
}

// startOpener runs o's command. One that can fail for want of an app
// (noApp) is watched for openerGrace: exiting with an error in that time
// is said, with the folder's path.
func (w *sessionWindow) startOpener(o opener) {
	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Dir = o.dir
	if w.launcher != nil {
		if err := w.launcher(cmd); err != nil {
			w.notice.show(widget.DangerImportance, "Could not open "+o.label+": "+err.Error())
		}
		return
	}
	detach(cmd)
	if err := cmd.Start(); err != nil {
		w.notice.show(widget.DangerImportance, "Could not open "+o.label+": "+err.Error())
		return
	}
	// The app belongs to the person: this goroutine only reaps it.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if o.noApp == "" {
		return
	}
	w.spawn(func(ctx context.Context) {
		t := time.NewTimer(openerGrace)
		defer t.Stop()
		select {
		case err := <-exited:
			switch {
			case err != nil && o.url != "":
				w.ui(func() { w.noBrowser(o.url, filepath.Base(o.argv[0])+" found no browser: "+o.noApp) })
			case err != nil:
				w.ui(func() { w.noFolderApp(o, o.dir, filepath.Base(o.argv[0])+" found no app to open the folder with") })
			}
		case <-t.C:
		case <-ctx.Done():
		}
	})
}

// openerGrace is how long a folder opener is watched for failing: the
// desktop's opener hands the folder over and exits within it.
const openerGrace = 5 * time.Second

// noFolderApp says that no app opened the session's copy, what to
// install, and where the folder is, with a button to copy its path.
func (w *sessionWindow) noFolderApp(o opener, dir, what string) {
	w.notice.show(widget.WarningImportance,
		what+": "+o.noApp+". Or open the read-only copy yourself, in "+dir+".",
		noticeAction{"Copy path", widget.HighImportance, func() {
			w.u.App.Clipboard().SetContent(dir)
			w.notice.show(widget.SuccessImportance, "Copied "+dir+".")
		}})
}

// noBrowser says that a web address could not be opened, and why, with a
// button to copy it for a browser of the person's choosing.
func (w *sessionWindow) noBrowser(url, why string) {
	w.notice.show(widget.WarningImportance,
		"Could not open "+url+": "+why+". Copy the address and open it in a browser.",
		noticeAction{"Copy URL", widget.HighImportance, func() {
			w.u.App.Clipboard().SetContent(url)
			w.notice.show(widget.SuccessImportance, "Copied "+url+".")
		}})
}
