//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// console writes stage markers and failures. The kernel hands init
// /dev/console as stdin, stdout and stderr, when the console exists by
// then. Under Virtualization.framework it does not: the console is hvc0,
// the virtio console, whose driver is a module that init itself loads, so
// the kernel finds no console to open and Go points fds 0-2 at /dev/null.
// Until the console exists (see attachWhenReady), lines are kept in
// memory, at most maxEarlyConsole bytes, and written out when it does.
type console struct {
	debug bool

	mu sync.Mutex
	// out is where lines go; nil while they are kept in early.
	out     io.Writer
	early   []byte
	dropped int // bytes of early lines left out past maxEarlyConsole
	// attached, once attachWhenReady has started, waits for its end.
	attached func() *os.File
}

// maxEarlyConsole bounds the lines kept before the console exists: a boot
// writes a few dozen (a few KiB), with sandbar.debug=1 a few hundred.
const maxEarlyConsole = 64 << 10

// newConsole returns a console that writes to stdout, or keeps lines
// until attach when stdout is not a console yet (see stdoutIsNull).
func newConsole(debug bool) *console {
	c := &console{debug: debug}
	if !stdoutIsNull() {
		c.out = os.Stdout
	}
	return c
}

// stdoutIsNull reports whether fd 1 is /dev/null (where the Go runtime
// points a closed fd 0-2 at start) or closed: the kernel found no console
// for init.
func stdoutIsNull() bool {
	var st unix.Stat_t
	if err := unix.Fstat(1, &st); err != nil {
		return true
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(1, 3)
}

// uptime is the time since the kernel started, so markers line up with
// the kernel's own log.
func uptime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// write writes s as it is, or keeps it until the console exists.
func (c *console) write(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out != nil {
		io.WriteString(c.out, s)
		return
	}
	if len(c.early)+len(s) > maxEarlyConsole {
		c.dropped += len(s)
		return
	}
	c.early = append(c.early, s...)
}

func (c *console) mark(format string, args ...any) {
	c.write(fmt.Sprintf("sandbar-init: [%8.3f] %s\n", uptime().Seconds(), fmt.Sprintf(format, args...)))
}

func (c *console) debugf(format string, args ...any) {
	if c.debug {
		c.mark(format, args...)
	}
}

// waiting reports whether lines are being kept for a console that does
// not exist yet.
func (c *console) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out == nil
}

// attach makes f the console: the lines kept so far are written to it
// first, and fds 1 and 2 become f, so the Go runtime's own messages (a
// panic) and any child started later reach it too. Attached already, it
// does nothing.
func (c *console) attach(f *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out != nil {
		return nil
	}
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil {
			return fmt.Errorf("point fd %d at the console: %w", fd, err)
		}
	}
	c.out = os.Stdout
	if c.dropped > 0 {
		fmt.Fprintf(c.out, "sandbar-init: (%d bytes of early console lines left out)\n", c.dropped)
	}
	c.out.Write(c.early)
	c.early, c.dropped = nil, 0
	return nil
}

// stopWaiting makes a console that is still keeping lines write them to
// stdout from now on, as they are (nothing will attach it later).
func (c *console) stopWaiting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		c.out = os.Stdout
		c.out.Write(c.early)
		c.early, c.dropped = nil, 0
	}
}

// consoleWait bounds the wait for the console device once its driver is
// loaded: the virtio console's port appears within milliseconds of the
// module's probe (the host adds it by a message on the control queue).
const consoleWait = 2 * time.Second

// attachWhenReady, when lines are being kept, opens the console device
// named by the kernel command line's console= (dev, such as "hvc0") in
// the background as soon as it exists, within limit, and attaches it.
// The returned function waits for that and returns the console's file,
// for the supervisor; nil when init had its console from the start (the
// supervisor inherited it) or the device never opened (said in the kernel
// log, as nothing else can show it).
func (c *console) attachWhenReady(dev string, limit time.Duration) func() *os.File {
	if !c.waiting() {
		return func() *os.File { return nil }
	}
	if dev == "" {
		dev = "console"
	}
	done := make(chan *os.File, 1)
	go func() {
		f, err := openConsole("/dev/"+dev, limit)
		if err == nil {
			if err = c.attach(f); err != nil {
				f.Close()
				f = nil
			}
		}
		if err != nil {
			kmsg(3, fmt.Sprintf("sandbar-init: console: %v\n", err))
		}
		done <- f
	}()
	wait := sync.OnceValue(func() *os.File { return <-done })
	c.mu.Lock()
	c.attached = wait
	c.mu.Unlock()
	return wait
}

// flush waits for an attach under way (see attachWhenReady), so that
// what was kept reaches the console before the machine powers off.
func (c *console) flush() {
	c.mu.Lock()
	wait := c.attached
	c.mu.Unlock()
	if wait != nil {
		wait()
	}
}

// openConsole opens a console device for writing, retrying while it is
// not there yet: the node appears when the tty driver registers (hvc
// makes hvc0-hvc7 at once) and opens once its port is set up; until then
// open fails with ENOENT, ENODEV or ENXIO. O_NOCTTY: PID 1 must not take
// a controlling terminal (a hangup would signal it).
func openConsole(path string, limit time.Duration) (*os.File, error) {
	deadline := time.Now().Add(limit)
	delay := time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENXIO) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not open within %v: %w", path, limit, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// kmsg writes a line to the kernel log at a syslog level (2 critical,
// 3 error).
func kmsg(level int, line string) {
	if k, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0); err == nil {
		fmt.Fprintf(k, "<%d>%s", level, line)
		k.Close()
	}
}
