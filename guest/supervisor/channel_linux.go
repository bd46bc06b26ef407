package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kinds of host channel, as the kernel argument sandbar.channel names
// them (vm.Channel on the host).
const (
	ChannelAuto   = "auto"
	ChannelSerial = "serial"
	ChannelVsock  = "vsock"
)

const (
	// PortName is the virtio-serial port the host offers under QEMU.
	PortName = "org.sandbar.0"
	// VsockPort is where the supervisor listens when there is no such
	// port (Virtualization.framework, or QEMU with vhost-vsock).
	VsockPort = 1024
)

// OpenChannel opens the byte stream to the host as kind says (the kernel
// argument sandbar.channel): ChannelSerial, the virtio-serial port named
// PortName, waited for up to 10 s; ChannelVsock, the first connection to
// AF_VSOCK port VsockPort; ChannelAuto (or ""), the port if one shows up
// within a second, else vsock. A host that says which spares the guest
// that second where there is no port (Virtualization.framework).
func OpenChannel(ctx context.Context, kind string) (io.ReadWriteCloser, error) {
	return channelOpener{
		sysRoot: "/sys", devRoot: "/dev", autoWait: time.Second, serialWait: 10 * time.Second,
		vsock: func(ctx context.Context) (io.ReadWriteCloser, error) { return acceptVsock(ctx, VsockPort) },
	}.open(ctx, kind)
}

// channelOpener is OpenChannel's work, with its places and waits apart
// for the tests.
type channelOpener struct {
	sysRoot, devRoot string
	// autoWait bounds ChannelAuto's look for the port; serialWait the
	// wait for the port the host said it gave (it appears a few
	// milliseconds after virtio_console's probe).
	autoWait, serialWait time.Duration
	vsock                func(context.Context) (io.ReadWriteCloser, error)
}

func (o channelOpener) open(ctx context.Context, kind string) (io.ReadWriteCloser, error) {
	switch kind {
	case ChannelSerial:
		f, err := openPortWithin(ctx, o.sysRoot, o.devRoot, o.serialWait)
		if errors.Is(err, errNoPort) {
			return nil, fmt.Errorf("the host said sandbar.channel=serial but %w appeared within %v", err, o.serialWait)
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	case ChannelVsock:
		return o.vsock(ctx)
	case ChannelAuto, "":
	default:
		return nil, fmt.Errorf("host channel %q: want %s, %s or %s", kind, ChannelAuto, ChannelSerial, ChannelVsock)
	}
	f, err := openPortWithin(ctx, o.sysRoot, o.devRoot, o.autoWait)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, errNoPort) {
		return nil, err
	}
	return o.vsock(ctx)
}

var errNoPort = errors.New("no virtio-serial port named " + PortName)

// openPortWithin waits up to wait for the port to be listed under sysRoot,
// then opens it under devRoot.
func openPortWithin(ctx context.Context, sysRoot, devRoot string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		dev, err := findPort(sysRoot, PortName)
		if err != nil {
			return nil, err
		}
		if dev != "" {
			return openPort(ctx, filepath.Join(devRoot, dev), 5*time.Second)
		}
		if time.Now().After(deadline) {
			return nil, errNoPort
		}
		if err := pause(ctx, portPoll); err != nil {
			return nil, err
		}
	}
}

// portPoll is how often the port is looked for and its open retried: it
// is on the boot's critical path, and a look costs a glob of a few sysfs
// entries.
const portPoll = 2 * time.Millisecond

// findPort returns the device name (vportNpM) of the port called name, or
// "" when none is listed.
func findPort(sysRoot, name string) (string, error) {
	paths, err := filepath.Glob(filepath.Join(sysRoot, "class", "virtio-ports", "*", "name"))
	if err != nil {
		return "", fmt.Errorf("list virtio ports: %w", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // a port going away
		}
		if strings.TrimSpace(string(data)) == name {
			return filepath.Base(filepath.Dir(p)), nil
		}
	}
	return "", nil
}

// openPort opens the port device, retrying while it is not ready yet: right
// after the module loads, open fails with ENXIO (or the node is not there)
// for a while.
func openPort(ctx context.Context, path string, bound time.Duration) (*os.File, error) {
	deadline := time.Now().Add(bound)
	delay := portPoll
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.ENXIO) && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open host port %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("open host port %s: still failing after %v: %w", path, bound, err)
		}
		if err := pause(ctx, delay); err != nil {
			return nil, err
		}
		delay = min(delay*2, 20*time.Millisecond)
	}
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("open the host channel: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

// acceptVsock listens on AF_VSOCK port and returns the first connection.
func acceptVsock(ctx context.Context, port uint32) (io.ReadWriteCloser, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("no vsock (%w): the VM needs a vsock device or the virtio-serial port %s", err, PortName)
	}
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: port}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind vsock port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen on vsock port %d: %w", port, err)
	}
	ln := os.NewFile(uintptr(fd), "vsock-listener")
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { _ = ln.SetReadDeadline(time.Now()) })
	defer stop()
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("vsock listener: %w", err)
	}
	var nfd int
	var aerr error
	err = rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
		return !errors.Is(aerr, unix.EAGAIN)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for the host on vsock port %d: %w", port, ctx.Err())
		}
		return nil, fmt.Errorf("accept on vsock port %d: %w", port, err)
	}
	if aerr != nil {
		return nil, fmt.Errorf("accept on vsock port %d: %w", port, aerr)
	}
	return os.NewFile(uintptr(nfd), "vsock"), nil
}
