//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbar/guest/supervisor"
)

// A template (sandbar.template=1) is this init stopped at its wait
// point: modules loaded but for the block and network drivers, nothing
// of a session mounted, blocked on the host channel. The host saves the
// machine there, and every VM started from it continues here with the
// go-ahead: its own kernel command line, entropy, clock and machine-id.

// Wire of the wait point; the host's are vm.TemplateWaiting, vm.GoAhead
// and vm.MaxGoAhead (tests/template_linux_test.go runs both ends).
const (
	templateWaiting = "sandbar-init: template waiting"
	maxGoAhead      = 64 << 10
)

// templateGoAhead is vm.GoAhead as the guest reads it.
type templateGoAhead struct {
	CommandLine string `json:"cmdline"`
	Seed        []byte `json:"seed"`
	TimeNS      int64  `json:"time_ns"`
	MachineID   string `json:"machine_id"`
	MAC         string `json:"mac,omitempty"`
}

// sessionCmdline is where PID 1 leaves the go-ahead's command line for
// the supervisor, whose /proc/cmdline is the template's. /run moves into
// the assembled root with the rest.
const sessionCmdline = "/run/sandbar/cmdline"

// templateDrivers are not loaded before the wait point: the template's
// disks and NIC are placeholders, and a driver that had probed them
// would keep their sizes, partition tables and MAC address. Loaded after
// the go-ahead, they probe the VM's own.
var templateDrivers = map[string]bool{"virtio_blk": true, "virtio_net": true}

// awaitSession is the wait point: it says so on the host channel, reads
// the go-ahead (bounded), closes the channel for the supervisor to open,
// reseeds the RNG, sets the clock and returns the VM's own config.
func awaitSession(c *console, tmpl config) (config, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ch, err := supervisor.OpenChannel(ctx, supervisor.ChannelSerial)
	if err != nil {
		return tmpl, "", fmt.Errorf("open the host channel: %w", err)
	}
	g, err := readGoAhead(ch)
	ch.Close()
	if err != nil {
		return tmpl, "", err
	}
	// Entropy first: nothing below may draw what every VM of this
	// template would draw alike.
	if err := addEntropy(g.Seed); err != nil {
		return tmpl, "", err
	}
	if g.TimeNS > 0 {
		tv := unix.NsecToTimeval(g.TimeNS)
		if err := unix.Settimeofday(&tv); err != nil {
			return tmpl, "", fmt.Errorf("set the clock: %w", err)
		}
	}
	cfg, err := parseCmdline(g.CommandLine)
	if err != nil {
		return tmpl, "", fmt.Errorf("the go-ahead's command line: %w", err)
	}
	if cfg.template {
		return tmpl, "", errors.New("the go-ahead's command line asks for a template again")
	}
	cfg.debug = cfg.debug || tmpl.debug
	if g.MAC != "" {
		mac, err := net.ParseMAC(g.MAC)
		if err != nil || len(mac) != 6 {
			return tmpl, "", fmt.Errorf("the go-ahead's MAC address %q is not an Ethernet address", g.MAC)
		}
		cfg.net.mac = mac
	}
	if err := os.MkdirAll(filepath.Dir(sessionCmdline), 0o700); err != nil {
		return tmpl, "", err
	}
	if err := os.WriteFile(sessionCmdline, []byte(g.CommandLine), 0o600); err != nil {
		return tmpl, "", err
	}
	c.mark("go-ahead received")
	return cfg, g.MachineID, nil
}

// readGoAhead says it waits and reads one go-ahead line from ch.
func readGoAhead(ch io.ReadWriter) (templateGoAhead, error) {
	var g templateGoAhead
	if _, err := io.WriteString(ch, templateWaiting+"\n"); err != nil {
		return g, fmt.Errorf("tell the host the template waits: %w", err)
	}
	// The host reads nothing more after this line until system:ready,
	// so no byte of the supervisor's is taken here.
	line, err := bufio.NewReaderSize(io.LimitReader(ch, maxGoAhead), maxGoAhead).ReadSlice('\n')
	if err != nil {
		return g, fmt.Errorf("read the go-ahead: %w", err)
	}
	if err := json.Unmarshal(line, &g); err != nil {
		return g, fmt.Errorf("the go-ahead is not JSON: %w", err)
	}
	if len(g.Seed) < 32 {
		return g, fmt.Errorf("the go-ahead's seed is %d bytes: want at least 32", len(g.Seed))
	}
	if id, err := hex.DecodeString(g.MachineID); err != nil || len(id) != 16 {
		return g, fmt.Errorf("the go-ahead's machine-id %q is not 32 hex digits", g.MachineID)
	}
	return g, nil
}

// addEntropy credits seed to the kernel's pool (RNDADDENTROPY) and has
// the RNG reseed from it at once (RNDRESEEDCRNG).
func addEntropy(seed []byte) error {
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("reseed the RNG: %w", err)
	}
	defer f.Close()
	// struct rand_pool_info { int entropy_count; int buf_size; __u32 buf[]; }
	buf := make([]byte, 8+len(seed))
	binary.NativeEndian.PutUint32(buf[0:], uint32(len(seed)*8))
	binary.NativeEndian.PutUint32(buf[4:], uint32(len(seed)))
	copy(buf[8:], seed)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.RNDADDENTROPY, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return fmt.Errorf("reseed the RNG: RNDADDENTROPY: %w", e)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.RNDRESEEDCRNG, 0); e != 0 {
		return fmt.Errorf("reseed the RNG: RNDRESEEDCRNG: %w", e)
	}
	return nil
}

// writeMachineID gives the assembled root its own machine-id.
func writeMachineID(id string) error {
	if err := os.WriteFile("/etc/machine-id", []byte(id+"\n"), 0o444); err != nil {
		return fmt.Errorf("write /etc/machine-id: %w", err)
	}
	return nil
}

// readCmdline is the VM's kernel command line: the go-ahead's when it
// started from a template, else /proc/cmdline.
func readCmdline() ([]byte, error) {
	if b, err := os.ReadFile(sessionCmdline); err == nil {
		return b, nil
	}
	return os.ReadFile("/proc/cmdline")
}
