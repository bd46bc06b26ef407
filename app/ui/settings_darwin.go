package ui

import "errors"

// keyringName is where secrets are kept, in words a person knows.
const keyringName = "Keychain"

// launchAtLoginNote is shown beside the launch-at-login setting.
const launchAtLoginNote = "On macOS, choose whether Sandbar opens at login in System Settings › General › Login Items."

// Login items belong to System Settings (SMAppService needs a signed
// bundle's helper); Sandbar only points there.
func launchAtLogin(string) (on, settable bool, err error) { return false, false, nil }

func setLaunchAtLogin(string, string, bool) error {
	return errors.New("set this in System Settings › General › Login Items")
}
