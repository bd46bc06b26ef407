package config

import (
	"errors"
	"path/filepath"
)

const platformCacheSuffix = "Library/Caches"

// defaultHome is where a Mac app keeps its data.
func defaultHome(env Env) (string, error) {
	home := env("HOME")
	if home == "" {
		return "", errors.New("HOME is not set")
	}
	return filepath.Join(home, "Library", "Application Support", "Sandbar"), nil
}
