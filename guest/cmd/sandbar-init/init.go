//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/guest/protocol"
)

// console writes stage markers and failures. The kernel hands init
// /dev/console as stdin, stdout and stderr.
type console struct {
	debug bool
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

func (c *console) mark(format string, args ...any) {
	fmt.Fprintf(os.Stdout, "sandbar-init: [%8.3f] %s\n", uptime().Seconds(), fmt.Sprintf(format, args...))
}

func (c *console) debugf(format string, args ...any) {
	if c.debug {
		c.mark(format, args...)
	}
}

// fatal reports what failed to the console and the kernel log, then powers
// off. It never returns.
func (c *console) fatal(what string, err error) {
	msg := fmt.Sprintf("sandbar-init: %s: %v\n", what, err)
	os.Stdout.WriteString(msg)
	if k, kerr := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0); kerr == nil {
		k.WriteString("<2>" + msg)
		k.Close()
	}
	powerOff(c)
}

// powerOff ends every process, syncs, makes the disks read-only, unmounts
// what it can and powers the machine off. If the
// kernel refuses, PID 1 must still not exit (that panics the kernel), so it
// blocks for ever.
func powerOff(c *console) {
	unix.Kill(-1, unix.SIGKILL) // every process but PID 1: nothing may write now
	unix.Sync()
	if err := remountAllReadOnly(); err != nil {
		c.mark("remount disks read-only: %v", err)
	}
	unmountAll(c)
	unix.Sync()
	c.mark("powering off")
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Fprintf(os.Stdout, "sandbar-init: power off: %v\n", err)
	}
	select {}
}

// runInit is PID 1's whole life.
func runInit() {
	c := &console{}
	c.mark("started")
	if err := mountEarly(); err != nil {
		c.fatal("mount kernel filesystems", err)
	}
	raw, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		c.fatal("read /proc/cmdline", err)
	}
	cfg, err := parseCmdline(string(raw))
	if err != nil {
		c.fatal("kernel command line", err)
	}
	c.debug = cfg.debug
	if cfg.trial {
		os.Stdout.WriteString(protocol.TrialMarker + "\n")
		powerOff(c)
	}
	for _, k := range cfg.unknown {
		c.mark("ignoring unknown kernel parameter %s", k)
	}
	if cfg.time > 0 {
		// Early, so files written while booting get sensible times.
		tv := unix.NsecToTimeval(cfg.time * int64(time.Second))
		if err := unix.Settimeofday(&tv); err != nil {
			c.fatal("set clock from sandbar.time", err)
		}
	}

	start := time.Now()
	n, err := loadModules(modulesList, cfg.modParams, func(p string, d time.Duration) {
		c.debugf("loaded %s in %dms", moduleName(p), d.Milliseconds())
	})
	if err != nil {
		c.fatal("load kernel modules", err)
	}
	c.mark("modules loaded (%d in %dms)", n, time.Since(start).Milliseconds())

	if cfg.root != "" {
		if err := assembleRoot(c, cfg); err != nil {
			c.fatal("assemble root", err)
		}
	} else {
		c.mark("no sandbar.root: staying in the initramfs")
	}
	if err := mountShare(cfg.share); err != nil {
		c.fatal("mount workspace share ("+cfg.share+")", err)
	}
	if cfg.share != "none" {
		c.mark("workspace mounted (%s)", cfg.share)
	}
	if err := setHostname("sandbar", "/etc/hosts"); err != nil {
		c.fatal("set hostname", err)
	}
	if err := setupNetwork(c, cfg.net); err != nil {
		c.fatal("network", err)
	}
	supervise := startSupervisor(c, cfg)
	reapUntil(c, supervise)
	powerOff(c)
}

// startSupervisor re-executes this binary as "sandbar-init supervise", a
// child process, so that PID 1's reaping never takes the exit status of a
// process the supervisor started.
func startSupervisor(c *console, cfg config) int {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"LANG=C.UTF-8",
	}
	if cfg.debug {
		env = append(env, "SANDBAR_DEBUG=1")
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"sandbar-init", "supervise"}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		c.fatal("start supervisor", err)
	}
	c.mark("supervisor started (pid %d)", pid)
	return pid
}

// reapUntil waits for every child, adopted orphans included, and returns
// when the supervisor has exited. SIGTERM, SIGINT or SIGPWR sent to PID 1
// are passed on to the supervisor, which then shuts down.
func reapUntil(c *console, supervisor int) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGPWR)
	go func() {
		// Lives as long as PID 1, which is the life of the machine.
		for s := range sigs {
			c.mark("received %v: stopping the supervisor", s)
			unix.Kill(supervisor, unix.SIGTERM)
		}
	}()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.mark("wait: %v", err)
			return
		}
		if pid == supervisor {
			c.mark("supervisor exited (%s)", describe(ws))
			return
		}
		c.debugf("reaped pid %d (%s)", pid, describe(ws))
	}
}

func describe(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal " + strings.ToUpper(unix.SignalName(ws.Signal()))
	}
	return fmt.Sprintf("status %#x", uint32(ws))
}
