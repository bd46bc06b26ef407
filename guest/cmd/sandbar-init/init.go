//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbar/guest/protocol"
)

// fatal reports what failed to the console and the kernel log, then powers
// off. It never returns.
func (c *console) fatal(what string, err error) {
	msg := fmt.Sprintf("sandbar-init: %s: %v\n", what, err)
	c.write(msg)
	kmsg(2, msg)
	c.flush()
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
		c.write(fmt.Sprintf("sandbar-init: power off: %v\n", err))
	}
	select {}
}

// runInit is PID 1's whole life.
func runInit() {
	c := newConsole(false)
	c.mark("started")
	if err := mountEarly(); err != nil {
		c.fatal("mount kernel filesystems", err)
	}
	if err := restrictPtrace(ptraceScopeFile); err != nil {
		c.mark("%v", err)
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
		c.write(protocol.TrialMarker + "\n")
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

	c.debugf("kernel file systems mounted")
	var supervisor supervisorProc
	if cfg.capture == "" {
		supervisor = startSupervisor(c, cfg)
	}
	loopback := loopbackUp()

	start := time.Now()
	idx, err := readModIndex(modulesList, modulesAlias)
	if err != nil {
		c.fatal("read the module list", err)
	}
	loader := func(cfg config) *modLoader {
		l := &modLoader{
			idx:      idx,
			params:   cfg.modParams,
			loadFile: loadModule,
			workers:  runtime.NumCPU(),
			report: func(name string, d time.Duration) {
				c.debugf("loaded %s in %dms", name, d.Milliseconds())
			},
		}
		if cfg.template {
			l.skip = templateDrivers
		}
		return l
	}
	n, err := loadModules(loader(cfg), "/sys", cfg)
	if err != nil {
		c.fatal("load kernel modules", err)
	}
	c.mark("modules loaded (%d in %dms)", n, time.Since(start).Milliseconds())
	// The console's driver is loaded by now; its device opens while the
	// root is assembled.
	consoleFile := c.attachWhenReady(cfg.console, consoleWait)

	var machineID string
	if cfg.template {
		cfg, machineID, err = awaitSession(c, cfg)
		if err != nil {
			c.fatal("template wait point", err)
		}
		c.debug = cfg.debug
		start = time.Now()
		l := loader(cfg)
		l.loaded = moduleLoaded
		n, err := loadModules(l, "/sys", cfg)
		if err != nil {
			c.fatal("load kernel modules after the go-ahead", err)
		}
		c.mark("modules loaded after the go-ahead (%d in %dms)", n, time.Since(start).Milliseconds())
	}

	if cfg.capture != "" {
		rep, err := runCapture(c, cfg)
		if err != nil {
			c.fatal("capture the prepared environment", err)
		}
		c.write(captureMarker(rep) + "\n")
		powerOff(c)
	}

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
	if cfg.root != "" && cfg.tools != "" {
		if err := bindTools(); err != nil {
			c.fatal("Sandbar's own tools", err)
		}
		c.mark("the root is an image's; Sandbar's own tools at %s", toolsRoot)
	}
	if machineID != "" && cfg.root != "" {
		if err := writeMachineID(machineID); err != nil {
			c.fatal("machine-id", err)
		}
	}
	if err := setHostname("sandbar", "/etc/hosts"); err != nil {
		c.fatal("set hostname", err)
	}
	netErr := networkOrWhy(c, cfg.net, loopback, "/sys/class/net")
	c.debugf("hostname and network (%s) set", cfg.net.mode)
	supervisor.release(c, consoleFile(), netErr)
	reapUntil(c, supervisor.pid)
	powerOff(c)
}

// supervisorProc is the supervisor's process while PID 1 readies the
// machine for it.
type supervisorProc struct {
	pid int
	// goAhead is PID 1's end of the socket on which release hands the
	// supervisor the root it is to run in.
	goAhead int
}

// goAheadEnv names the supervisor's end of the go-ahead socket.
const goAheadEnv = "SANDBAR_GO_AHEAD_FD"

// startSupervisor re-executes this binary as "sandbar-init supervise", a
// child process, so that PID 1's reaping never takes the exit status of a
// process the supervisor started. It starts before the machine is ready
// and waits for release: the start of a Go program (its runtime, its
// pages faulted in) took ~40 ms of a guest's boot under emulation, which
// this overlaps with the disks' I/O, or on a second vCPU runs beside the
// module loading.
func startSupervisor(c *console, cfg config) supervisorProc {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		c.fatal("start supervisor", err)
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"LANG=C.UTF-8",
		goAheadEnv + "=3",
	}
	if cfg.debug {
		env = append(env, "SANDBAR_DEBUG=1")
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"sandbar-init", "supervise"}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{0, 1, 2, uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	unix.Close(fds[1])
	if err != nil {
		c.fatal("start supervisor", err)
	}
	c.mark("supervisor started (pid %d)", pid)
	return supervisorProc{pid: pid, goAhead: fds[0]}
}

// release lets the supervisor go on: it sends it an open handle on PID
// 1's root, which is the overlay root by now, for the supervisor to move
// into (the initramfs it started in no longer has /proc or /dev), and the
// console when PID 1 opened it after the supervisor started (nil: the
// supervisor inherited it), and why the network is not up ("" when it is).
func (p supervisorProc) release(c *console, cons *os.File, netErr string) {
	defer unix.Close(p.goAhead)
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.fatal("open the root for the supervisor", err)
	}
	defer unix.Close(root)
	g := goAhead{root: root, console: -1, netErr: netErr}
	if cons != nil {
		g.console = int(cons.Fd())
	}
	if err := sendGoAhead(p.goAhead, g); err != nil {
		// It has exited already; reapUntil hears how.
		c.mark("release the supervisor: %v", err)
	}
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
