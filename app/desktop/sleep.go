package desktop

import (
	"context"
	"errors"
)

// SleepHandler is what WatchSleep calls around the host's sleep: Sleeping
// as the host is about to sleep, which the sleep waits for as long as
// the system lets it (logind: InhibitDelayMaxSec, 5 s unless set), and
// Woke once it woke. They are called one at a time, in order.
type SleepHandler struct {
	Sleeping func(ctx context.Context)
	Woke     func(ctx context.Context)
}

// ErrNoSleepSignal: this system gives Sandbar no word of its sleep (no
// system bus or no logind on Linux; not written yet on macOS).
var ErrNoSleepSignal = errors.New("this system does not tell Sandbar when it sleeps")
