package ui

import (
	"os/exec"
	"path/filepath"
	"syscall"

	"fyne.io/fyne/v2/theme"
)

// linuxTerminals are tried in order; x-terminal-emulator is Debian's choice
// of the person's terminal. Each opens in its working directory.
var linuxTerminals = []string{"x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "kitty", "alacritty", "xterm"}

// findTerminal returns the person's terminal app: $TERMINAL, else the
// first of linuxTerminals installed; "" when there is none.
func findTerminal(getenv func(string) string, look func(string) (string, error)) string {
	if t := getenv("TERMINAL"); t != "" {
		if _, err := look(t); err == nil {
			return t
		}
	}
	for _, t := range linuxTerminals {
		if _, err := look(t); err == nil {
			return t
		}
	}
	return ""
}

// terminalArgv is the command line that opens terminal app t running
// argv: most take -e and the command after it; a few spell it otherwise.
func terminalArgv(t string, argv []string) []string {
	switch filepath.Base(t) {
	case "gnome-terminal":
		return append([]string{t, "--"}, argv...)
	case "xfce4-terminal":
		return append([]string{t, "-x"}, argv...)
	case "kitty":
		return append([]string{t}, argv...)
	}
	return append([]string{t, "-e"}, argv...)
}

// shellOpener opens a terminal app running `sandbar shell id`: a shell
// inside the session's VM. Without a terminal app it says what to run.
func shellOpener(self, id string, getenv func(string) string, look func(string) (string, error)) opener {
	o := opener{label: "Terminal app", icon: theme.ComputerIcon(), vm: true}
	if t := findTerminal(getenv, look); t != "" {
		o.argv = terminalArgv(t, []string{self, "shell", id})
	} else {
		o.missing = "no terminal app found (x-terminal-emulator, gnome-terminal, konsole, xterm…, or $TERMINAL): the Terminal tab has a shell in the VM"
	}
	return o
}

// workspaceOpeners lists the ways to open dir on Linux: the file manager
// (xdg-open) and an editor ($VISUAL, else $EDITOR in a terminal, else VS
// Code's code).
func workspaceOpeners(dir string, getenv func(string) string, look func(string) (string, error)) []opener {
	files := xdgOpener(opener{label: "Files", icon: theme.FolderOpenIcon(), dir: dir}, dir, look)
	files.noApp = folderAppHint
	if files.missing != "" {
		// Pressing it still makes the copy, and says where it is.
		files.missing, files.noApp = "", "xdg-open is not installed; "+folderAppHint
	}

	ed := opener{label: "Editor", icon: theme.DocumentCreateIcon(), dir: dir}
	term := findTerminal(getenv, look)
	switch {
	case getenv("VISUAL") != "":
		ed.argv = editorArgv(getenv("VISUAL"), dir)
	case getenv("EDITOR") != "" && term != "":
		ed.argv = terminalArgv(term, editorArgv(getenv("EDITOR"), dir))
	default:
		if _, err := look("code"); err == nil {
			ed.argv = []string{"code", dir}
		} else {
			ed.missing = "set $VISUAL or $EDITOR, or install VS Code (code)"
		}
	}
	return []opener{files, ed}
}

// folderAppHint is what to install when no app opens a folder.
const folderAppHint = "install a file manager (such as Nautilus, Dolphin or Thunar, with xdg-utils)"

// detach starts cmd in a session of its own.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// fileOpener opens a file in the person's app for it (xdg-open).
func fileOpener(path string, look func(string) (string, error)) opener {
	return xdgOpener(opener{label: filepath.Base(path), icon: theme.FileTextIcon(), dir: filepath.Dir(path)}, path, look)
}

// xdgOpener makes o open target with xdg-open, the desktop's choice of
// app for it, or says why it cannot.
func xdgOpener(o opener, target string, look func(string) (string, error)) opener {
	if _, err := look("xdg-open"); err == nil {
		o.argv = []string{"xdg-open", target}
	} else {
		o.missing = "xdg-open is not installed (it comes with xdg-utils)"
	}
	return o
}
