//go:build !linux && !darwin

package ui

import "errors"

// newDesktopNotifier: this platform's notifications go through Fyne.
func newDesktopNotifier(string, func(string)) (desktopNotifier, error) {
	return nil, errors.New("no desktop notification service is supported here")
}
