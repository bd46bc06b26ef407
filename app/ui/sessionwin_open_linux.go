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

// workspaceOpeners lists the ways to open dir on Linux: the file manager
// (xdg-open), a terminal, and an editor ($VISUAL, else $EDITOR in a
// terminal, else VS Code's code).
func workspaceOpeners(dir string, getenv func(string) string, look func(string) (string, error)) []opener {
	files := xdgOpener(opener{label: "Files", icon: theme.FolderOpenIcon(), dir: dir}, dir, look)

	term := opener{label: "Terminal", icon: theme.ComputerIcon(), dir: dir}
	for _, t := range linuxTerminals {
		if _, err := look(t); err == nil {
			term.argv = []string{t}
			break
		}
	}
	if term.argv == nil {
		term.missing = "no terminal found (x-terminal-emulator, gnome-terminal, konsole, xterm…)"
	}

	ed := opener{label: "Editor", icon: theme.DocumentCreateIcon(), dir: dir}
	switch {
	case getenv("VISUAL") != "":
		ed.argv = editorArgv(getenv("VISUAL"), dir)
	case getenv("EDITOR") != "" && term.argv != nil:
		ed.argv = append([]string{term.argv[0], "-e"}, editorArgv(getenv("EDITOR"), dir)...)
	default:
		if _, err := look("code"); err == nil {
			ed.argv = []string{"code", dir}
		} else {
			ed.missing = "set $VISUAL or $EDITOR, or install VS Code (code)"
		}
	}
	return []opener{files, term, ed}
}

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
