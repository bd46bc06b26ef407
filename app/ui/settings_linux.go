package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// keyringName is where secrets are kept, in words a person knows.
const keyringName = "Secret Service keyring"

// launchAtLoginNote is shown beside the launch-at-login setting.
const launchAtLoginNote = "Adds Sandbar to your desktop's autostart programs (~/.config/autostart)."

// autostartFile is the XDG autostart entry that starts Sandbar at login.
const autostartFile = "sandbar.desktop"

func launchAtLogin(dir string) (on, settable bool, err error) {
	if dir == "" {
		return false, false, nil
	}
	_, err = os.Stat(filepath.Join(dir, autostartFile))
	switch {
	case err == nil:
		return true, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, true, nil
	}
	return false, true, fmt.Errorf("read the autostart entry: %w", err)
}

func setLaunchAtLogin(dir, exe string, on bool) error {
	if dir == "" {
		return errors.New("no autostart folder is known: set XDG_CONFIG_HOME or HOME")
	}
	path := filepath.Join(dir, autostartFile)
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	if exe == "" {
		return errors.New("cannot tell where the Sandbar program is: start it from its full path and try again")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	entry := "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=Sandbar\n" +
		"Comment=Coding agents, each in its own VM\n" +
		"Exec=" + desktopExec(exe) + "\n" +
		"Icon=sandbar\n" +
		"Terminal=false\n" +
		"X-GNOME-Autostart-enabled=true\n"
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(entry), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// desktopExec quotes a program path for a desktop entry's Exec key: the
// Exec rules (double quotes; \ " ` $ escaped), then the string rules (\
// doubled once more).
func desktopExec(path string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range path {
		switch r {
		case '"', '`', '$':
			b.WriteString(`\\`)
		case '\\':
			b.WriteString(`\\\`)
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
