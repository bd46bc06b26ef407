//go:build darwin

package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	vzapi "github.com/Code-Hex/vz/v3"

	"sandbar/vm"
)

// killWait bounds the wait for the framework to report a stopped VM.
const killWait = 5 * time.Second

// machine is one VM owned by this process.
type machine struct {
	vm   *vzapi.VirtualMachine // kept referenced: its finalizer releases the VM
	plan Plan
	log  *slog.Logger
	conn net.Conn
	// console copies the guest's console into its capped log; nil when
	// the VM has none.
	console *console

	// exit is told by watch, the one goroutine that follows the VM's
	// state, once the VM has stopped.
	exit *vm.Exit

	// diskEvents and resumeReq belong to watchSpace (pause_darwin.go).
	diskEvents chan vm.DiskEvent
	resumeReq  chan chan error
}

func start(ctx context.Context, cfg *vzapi.VirtualMachineConfiguration, p Plan, cons *console, connectTimeout time.Duration, log *slog.Logger) (*machine, error) {
	v, err := vzapi.NewVirtualMachine(cfg)
	if err != nil {
		cons.stop()
		return nil, fmt.Errorf("create VM: %w", err)
	}
	if err := v.Start(); err != nil {
		cons.stop()
		return nil, fmt.Errorf("start VM (console log: %s): %w", p.ConsoleLog, err)
	}
	m := &machine{vm: v, plan: p, log: log, console: cons, exit: vm.NewExit(),
		diskEvents: make(chan vm.DiskEvent, 1), resumeReq: make(chan chan error)}
	// The notification channel is unbounded and the framework only reports
	// changes, so watching from here on misses nothing since Start.
	go m.watch(v.StateChangedNotify())
	go m.watchSpace()
	log.Debug("vz VM started", "cpus", p.CPUs, "memory_mib", p.Memory/vm.MiB)

	conn, err := m.connect(ctx, connectTimeout)
	if err != nil {
		if kerr := m.killAndWait(); kerr != nil {
			m.log.Error("VM left running after a failed boot", "err", kerr)
		}
		return nil, err
	}
	m.conn = conn
	return m, nil
}

// watch owns the VM's lifecycle: it alone reads the state channel, and it
// tells exit when the VM has stopped for good.
func (m *machine) watch(states <-chan vzapi.VirtualMachineState) {
	var err error
	defer func() { m.exit.End(err) }()
	defer m.console.stop()
	for s := range states {
		switch s {
		case vzapi.VirtualMachineStateStopped:
			m.log.Debug("vz VM stopped")
			return
		case vzapi.VirtualMachineStateError:
			err = fmt.Errorf("Virtualization.framework stopped the VM after an internal error: see the guest console in %s", m.plan.ConsoleLog)
			return
		}
	}
}

// connect dials the supervisor's vsock port until it listens. The framework
// answers at once with an error while nothing listens, so the loop is a
// short poll bounded by timeout, ctx and the VM's life, and each attempt by
// connectAttempt (see dial).
func (m *machine) connect(ctx context.Context, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	devs := m.vm.SocketDevices()
	if len(devs) == 0 {
		return nil, errors.New("the VM has no vsock device: this is a bug in the vz backend's configuration")
	}
	dev := devs[0]
	conn, err := dial(ctx, dialer[*vzapi.VirtioSocketConnection]{
		attempt: func() (*vzapi.VirtioSocketConnection, error) {
			c, err := dev.Connect(m.plan.VsockPort)
			if err == nil && c == nil {
				err = errors.New("the framework returned no connection")
			}
			return c, err
		},
		retryable: func(err error) bool {
			var nserr *vzapi.NSError
			return errors.As(err, &nserr) && connectRetryable(nserr.Domain, nserr.Code)
		},
		stopped: m.exit.Done(),
	})
	switch {
	case err == nil:
		return conn, nil
	case errors.Is(err, errVMStopped):
		return nil, fmt.Errorf("the VM stopped before the guest supervisor listened: see the guest console in %s", m.plan.ConsoleLog)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("guest supervisor did not listen on vsock port %d (console: %s): %w", m.plan.VsockPort, m.plan.ConsoleLog, errors.Join(vm.ErrBootTimeout, ctx.Err()))
	default:
		return nil, fmt.Errorf("connect to the guest supervisor on vsock port %d: %w", m.plan.VsockPort, err)
	}
}

func (m *machine) Conn() io.ReadWriteCloser { return m.conn }

// PID is 0: the VM belongs to this process (the framework's own XPC
// service runs it, and dies with this process).
func (m *machine) PID() int { return 0 }

func (m *machine) Wait(ctx context.Context) error { return m.exit.Wait(ctx) }

// Stop presses the power button (RequestStop) and pulls the plug (Stop)
// when the guest has not powered off in time (vm.Exit.PowerOff). Asking
// the guest through its protocol first is the caller's (app/sandbox).
func (m *machine) Stop(ctx context.Context) error {
	if m.exit.PowerOff(ctx, m.pressPowerButton) {
		return nil
	}
	m.log.Warn("guest did not power off; stopping the VM")
	return m.killAndWait()
}

// errNoButton: the framework offers no power button now (RequestStop),
// or did not take the press.
var errNoButton = errors.New("the framework took no power button press")

func (m *machine) pressPowerButton() error {
	if !m.vm.CanRequestStop() {
		return errNoButton
	}
	m.log.Info("pressing the power button")
	ok, err := m.vm.RequestStop()
	if err != nil {
		m.log.Warn("power button", "err", err)
		return err
	}
	if !ok {
		return errNoButton
	}
	return nil
}

// Kill stops the VM at once, without the guest's say. It returns once the
// framework has taken the order; Wait sees the VM stopped a moment later.
func (m *machine) Kill() error {
	if m.exit.Exited() {
		return nil
	}
	if !m.vm.CanStop() {
		return fmt.Errorf("the VM is %v and the framework will not stop it now: try again in a moment", m.vm.State())
	}
	if err := m.vm.Stop(); err != nil {
		if m.exit.Exited() {
			return nil
		}
		return fmt.Errorf("stop VM: %w", err)
	}
	return nil
}

// killAndWait kills the VM and waits, boundedly, for the watcher to see it
// stopped: the framework reports the state change just after Stop returns.
func (m *machine) killAndWait() error {
	if err := m.Kill(); err != nil {
		return err
	}
	if !m.exit.WaitFor(killWait) {
		return fmt.Errorf("the VM did not report stopping within %v of being stopped", killWait)
	}
	return nil
}

// Stats reports what this process can see of itself, which is not the
// whole cost: Virtualization.framework runs each VM's vCPUs and guest
// memory in an XPC service process (com.apple.Virtualization.VirtualMachine)
// that it owns, and offers neither its pid nor per-VM figures. So CPUTime is
// this process's user+system time (device emulation done here, vsock,
// virtio-fs bookkeeping) and RSS its peak resident size, which getrusage
// reports in bytes on macOS. Activity Monitor's "Virtual Machine Service"
// row shows the rest.
func (m *machine) Stats() (vm.Stats, error) {
	if m.exit.Exited() {
		return vm.Stats{}, vm.ErrNotRunning
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return vm.Stats{}, fmt.Errorf("getrusage: %w", err)
	}
	return vm.Stats{
		CPUTime: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		RSS:     uint64(ru.Maxrss),
	}, nil
}
