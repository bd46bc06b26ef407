//go:build !linux && !darwin

package desktop

import (
	"context"
	"log/slog"
)

// SleepWatch watches the host's sleep until Close.
type SleepWatch struct{}

// WatchSleep: Sandbar knows no sleep signal on this system.
func WatchSleep(ctx context.Context, h SleepHandler, log *slog.Logger) (*SleepWatch, error) {
	return nil, ErrNoSleepSignal
}

// Close does nothing.
func (w *SleepWatch) Close() {}
