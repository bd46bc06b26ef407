package ui

import (
	"path/filepath"
	"strings"
)

// Host paths as a person reads and types them: the home folder is ~
// (UI.Home). Only what is shown or typed goes through here; the backend
// is always handed the full path, and so is a copy action.

// tildePath is path with the home folder written ~, as a person reads it:
// ~/src/shop for /home/ann/src/shop when home is /home/ann. A path
// outside home (/home/annie, /srv) is as it was, and so is every path
// when home is unknown ("") or the root.
func tildePath(path, home string) string {
	home = strings.TrimSuffix(home, "/")
	switch {
	case home == "":
		return path
	case path == home:
		return "~"
	}
	if rest, ok := strings.CutPrefix(path, home+"/"); ok {
		return "~/" + rest
	}
	return path
}

// expandPath is what a person typed as a path: ~ is the home folder, and
// a relative path is taken from it. It keeps a trailing slash.
func expandPath(typed, home string) string {
	typed = strings.TrimSpace(typed)
	switch {
	case typed == "":
		return ""
	case typed == "~":
		return home
	case strings.HasPrefix(typed, "~/"):
		return home + typed[1:]
	case filepath.IsAbs(typed) || home == "":
		return typed
	}
	full := filepath.Join(home, typed)
	if strings.HasSuffix(typed, "/") {
		full += "/"
	}
	return full
}
