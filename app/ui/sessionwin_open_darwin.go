package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"fyne.io/fyne/v2/theme"
)

// shellOpener opens Terminal.app running `sandbar shell id`: a shell
// inside the session's VM. Terminal's do script takes a shell command
// line inside an AppleScript string, so it is quoted for both.
func shellOpener(self, id string, getenv func(string) string, look func(string) (string, error)) opener {
	line := shellQuote(self) + " shell " + shellQuote(id)
	script := "tell application \"Terminal\"\nactivate\ndo script " + appleScriptString(line) + "\nend tell"
	return opener{label: "Terminal app", icon: theme.ComputerIcon(), vm: true, argv: []string{"osascript", "-e", script}}
}

// workspaceOpeners lists the ways to open dir on macOS: Finder and an
// editor ($VISUAL, else Visual Studio Code).
func workspaceOpeners(dir string, getenv func(string) string, look func(string) (string, error)) []opener {
	files := opener{label: "Finder", icon: theme.FolderOpenIcon(), dir: dir, argv: []string{"open", dir}}
	ed := opener{label: "Editor", icon: theme.DocumentCreateIcon(), dir: dir}
	switch {
	case getenv("VISUAL") != "":
		ed.argv = editorArgv(getenv("VISUAL"), dir)
	case hasApp(getenv("HOME"), "Visual Studio Code.app"):
		ed.argv = []string{"open", "-a", "Visual Studio Code", dir}
	default:
		if _, err := look("code"); err == nil {
			ed.argv = []string{"code", dir}
		} else {
			ed.missing = "install Visual Studio Code, or set $VISUAL"
		}
	}
	return []opener{files, ed}
}

// hasApp reports whether the app bundle is in /Applications or
// ~/Applications.
func hasApp(home, bundle string) bool {
	for _, d := range []string{"/Applications", filepath.Join(home, "Applications")} {
		if _, err := os.Stat(filepath.Join(d, bundle)); err == nil {
			return true
		}
	}
	return false
}

// detach starts cmd in a session of its own.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// fileOpener opens a file in the person's app for it (open: Console for
// a .log, unless they chose another).
func fileOpener(path string, look func(string) (string, error)) opener {
	return opener{label: filepath.Base(path), icon: theme.FileTextIcon(), dir: filepath.Dir(path), argv: []string{"open", path}}
}
