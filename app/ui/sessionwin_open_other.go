//go:build !linux && !darwin

package ui

import (
	"os/exec"

	"fyne.io/fyne/v2/theme"
)

// workspaceOpeners has nothing to offer where Sandbar does not run.
func workspaceOpeners(dir string, getenv func(string) string, look func(string) (string, error)) []opener {
	why := "not available on this system"
	return []opener{
		{label: "Files", icon: theme.FolderOpenIcon(), dir: dir, missing: why},
		{label: "Editor", icon: theme.DocumentCreateIcon(), dir: dir, missing: why},
	}
}

// shellOpener has nothing to offer where Sandbar does not run.
func shellOpener(self, id string, getenv func(string) string, look func(string) (string, error)) opener {
	return opener{label: "Terminal app", icon: theme.ComputerIcon(), vm: true, missing: "not available on this system: the Terminal tab has a shell in the VM"}
}

func detach(*exec.Cmd) {}

// fileOpener has nothing to offer where Sandbar does not run.
func fileOpener(path string, look func(string) (string, error)) opener {
	return opener{label: path, icon: theme.FileTextIcon(), missing: "not available on this system"}
}
