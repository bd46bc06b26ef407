// Package hostsleep tells the engine when the host is about to sleep and
// when it woke, so that it can save its sessions first (logind's
// PrepareForSleep on Linux, with a delay lock that holds the sleep while
// they are saved). It knows nothing of sessions: it calls a Handler. It
// is apart from app/desktop, which needs Fyne, so that the headless
// engine (`sandbar serve`) hears the sleep too.
package hostsleep

import (
	"context"
	"errors"
)

// Handler is what Start calls around the host's sleep: Sleeping
// as the host is about to sleep, which the sleep waits for as long as
// the system lets it (logind: InhibitDelayMaxSec, 5 s unless set), and
// Woke once it woke. They are called one at a time, in order.
type Handler struct {
	Sleeping func(ctx context.Context)
	Woke     func(ctx context.Context)
}

// ErrNoSignal: this system gives Sandbar no word of its sleep (no
// system bus or no logind on Linux; not written yet on macOS).
var ErrNoSignal = errors.New("this system does not tell Sandbar when it sleeps")
