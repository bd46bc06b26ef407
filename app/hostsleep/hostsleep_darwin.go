package hostsleep

import (
	"context"
	"fmt"
	"log/slog"
)

// Watch watches the host's sleep until Close.
type Watch struct{}

// Start is not written on macOS yet, and says so: Sandbar needs an
// observer of NSWorkspace's NSWorkspaceWillSleepNotification and
// NSWorkspaceDidWakeNotification on
// NSWorkspace.sharedWorkspace.notificationCenter (AppKit, in
// menubar_darwin.m's way, calling back into Go), and an IOKit power
// assertion (IOPMAssertionCreateWithName, kIOPMAssertionTypePreventSystemSleep,
// released once Sleeping returns) in logind's delay lock's place, since
// will-sleep alone gives a handler no time. Until then, sessions under
// vz run on through a sleep as before.
func Start(ctx context.Context, h Handler, log *slog.Logger) (*Watch, error) {
	return nil, fmt.Errorf("%w: NSWorkspace's will-sleep observer is not written yet", ErrNoSignal)
}

// Close does nothing.
func (w *Watch) Close() {}
