package config

import (
	"errors"
	"path/filepath"
)

const platformCacheSuffix = ".cache"

// defaultHome follows the XDG base directory spec: $XDG_DATA_HOME/sandbar,
// else ~/.local/share/sandbar.
func defaultHome(env Env) (string, error) {
	if dir := env("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "sandbar"), nil
	}
	home := env("HOME")
	if home == "" {
		return "", errors.New("HOME is not set")
	}
	return filepath.Join(home, ".local", "share", "sandbar"), nil
}
