package qemu

import (
	"context"
	"fmt"
	"os"

	"sandbar/vm"
)

// VhostVsock reports whether this host can give a guest a vsock device:
// never on macOS, whose QEMU has no vhost-vsock.
func VhostVsock() bool { return false }

func connectVsock(context.Context, uint32, uint32, <-chan struct{}) (*os.File, error) {
	return nil, fmt.Errorf("vsock to a QEMU guest on macOS: %w", vm.ErrUnavailable)
}
