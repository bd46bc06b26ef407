//go:build !linux && !darwin

package hostsleep

import (
	"context"
	"log/slog"
)

// Watch watches the host's sleep until Close.
type Watch struct{}

// Start: Sandbar knows no sleep signal on this system.
func Start(ctx context.Context, h Handler, log *slog.Logger) (*Watch, error) {
	return nil, ErrNoSignal
}

// Close does nothing.
func (w *Watch) Close() {}
