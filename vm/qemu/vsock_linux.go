package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// VhostVsock reports whether this host can give a guest a vsock device:
// /dev/vhost-vsock exists and this user can open it (the vhost_vsock
// module is loaded, and the node is readable and writable, often by the
// kvm group only).
func VhostVsock() bool {
	f, err := os.OpenFile("/dev/vhost-vsock", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// dialVsock connects to port on the guest at cid, once: a guest not
// listening yet answers with a reset (ECONNRESET), one whose driver is
// not up yet lets the attempt time out (after tryFor).
func dialVsock(cid, port uint32, tryFor time.Duration) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("vsock socket: %w", err)
	}
	tv := unix.NsecToTimeval(tryFor.Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.AF_VSOCK, unix.SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv)
	if err := unix.Connect(fd, &unix.SockaddrVM{CID: cid, Port: port}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Non-blocking, so the runtime's poller serves it and Close ends a
	// Read that waits.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("vsock:%d:%d", cid, port)), nil
}

// vsockRetryable reports whether a failed connect means only that the
// guest is not listening yet.
func vsockRetryable(err error) bool {
	for _, e := range []unix.Errno{unix.ECONNRESET, unix.ECONNREFUSED, unix.ETIMEDOUT, unix.ENODEV, unix.EHOSTUNREACH, unix.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// connectVsock connects to the guest supervisor at cid, retrying until it
// listens, done closes (QEMU exited) or ctx ends.
func connectVsock(ctx context.Context, cid, port uint32, done <-chan struct{}) (*os.File, error) {
	for {
		f, err := dialVsock(cid, port, time.Second)
		if err == nil {
			return f, nil
		}
		if !vsockRetryable(err) {
			return nil, fmt.Errorf("connect to the guest on vsock %d:%d: %w", cid, port, err)
		}
		select {
		case <-done:
			return nil, errors.New("qemu exited before the guest listened on vsock")
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to the guest on vsock %d:%d: %w (last: %v)", cid, port, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
