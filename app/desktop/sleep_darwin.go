package desktop

import (
	"context"
	"fmt"
	"log/slog"
)

// SleepWatch watches the host's sleep until Close.
type SleepWatch struct{}

// WatchSleep is not written on macOS yet, and says so: Sandbar needs an
// observer of NSWorkspace's NSWorkspaceWillSleepNotification and
// NSWorkspaceDidWakeNotification on
// NSWorkspace.sharedWorkspace.notificationCenter (AppKit, in
// menubar_darwin.m's way, calling back into Go), and an IOKit power
// assertion (IOPMAssertionCreateWithName, kIOPMAssertionTypePreventSystemSleep,
// released once Sleeping returns) in logind's delay lock's place, since
// will-sleep alone gives a handler no time. Until then, sessions under
// vz run on through a sleep as before.
func WatchSleep(ctx context.Context, h SleepHandler, log *slog.Logger) (*SleepWatch, error) {
	return nil, fmt.Errorf("%w: NSWorkspace's will-sleep observer is not written yet", ErrNoSleepSignal)
}

// Close does nothing.
func (w *SleepWatch) Close() {}
