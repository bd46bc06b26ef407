//go:build !linux && !darwin

package ui

import "errors"

// keyringName is where secrets are kept, in words a person knows.
const keyringName = "system keyring"

// launchAtLoginNote is shown beside the launch-at-login setting.
const launchAtLoginNote = "Sandbar cannot set itself to open at login on this system."

func launchAtLogin(string) (on, settable bool, err error) { return false, false, nil }

func setLaunchAtLogin(string, string, bool) error {
	return errors.New("opening at login is not supported on this system")
}
