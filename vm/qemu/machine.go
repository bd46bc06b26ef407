package qemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"sandbar/vm"
	"sandbar/vm/caplog"
)

// machine is one QEMU process and its channel.
type machine struct {
	spec    vm.Spec
	plan    plan
	log     *slog.Logger
	cmd     *exec.Cmd
	helpers []*exec.Cmd // virtiofsd daemons
	conn    io.ReadWriteCloser
	stderr  *tailBuffer
	// console is Sandbar's end of the console socket; consoleDone is
	// closed when the goroutine copying it to the log has finished.
	console     net.Conn
	consoleDone chan struct{}
	sockDir     string // removed at exit when it is a private temp dir

	exit *vm.Exit
	once sync.Once
	// diskEvents is fed by watchEvents (vm.DiskPauser), which ends, and
	// closes it, before exit is told.
	diskEvents chan vm.DiskEvent
}

func start(ctx context.Context, p plan, spec vm.Spec, privateSockDir bool, log *slog.Logger) (*machine, error) {
	// Before anything that cleanup undoes: cleanup removes the pid file.
	if err := checkPIDFile(p.PIDFile); err != nil {
		return nil, err
	}
	m := &machine{spec: spec, plan: p, log: log, stderr: &tailBuffer{max: 8 << 10}, exit: vm.NewExit(), diskEvents: make(chan vm.DiskEvent, 1)}
	if privateSockDir {
		m.sockDir = filepath.Dir(p.Channel)
	}
	for _, s := range []string{p.Channel, p.QMP, p.QMPEvents} {
		if s != "" {
			os.Remove(s)
		}
	}
	for _, job := range p.Virtiofsd {
		if err := m.startVirtiofsd(job); err != nil {
			m.cleanup()
			return nil, err
		}
	}
	m.cmd = exec.Command(p.Binary, p.Args...)
	m.cmd.SysProcAttr = procAttr(m.plan.ParentDeath)
	m.cmd.Stdout, m.cmd.Stderr = m.stderr, m.stderr
	m.cmd.ExtraFiles = slices.Clone(p.ExtraFiles)
	qemuEnd, err := m.startConsole()
	if err != nil {
		m.cleanup()
		return nil, err
	}
	if qemuEnd != nil {
		m.cmd.ExtraFiles[p.ConsoleFile] = qemuEnd
	}
	err = p.start(m.cmd)
	if qemuEnd != nil {
		qemuEnd.Close() // QEMU has its own copy
	}
	if err != nil {
		m.stopConsole()
		m.cleanup()
		return nil, fmt.Errorf("start %s: %w", p.Binary, err)
	}
	log.Debug("qemu started", "pid", m.cmd.Process.Pid, "args", strings.Join(p.Args, " "))
	if err := writePIDFile(m.plan.PIDFile, m.cmd.Process.Pid); err != nil {
		m.log.Warn("no pid file: a crash of this process would leave the VM for no one to find", "err", err)
	}
	exited, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		m.watchEvents(exited)
	}()
	go func() {
		err := m.cmd.Wait()
		if err != nil {
			err = fmt.Errorf("qemu exited: %w: %s", err, strings.TrimSpace(m.stderr.String()))
		}
		close(exited)
		<-watching
		m.stopConsole()
		m.cleanup()
		m.exit.End(err)
	}()
	conn, err := m.openChannel(ctx)
	if err != nil {
		m.Kill()
		<-m.exit.Done()
		return nil, err
	}
	m.conn = conn
	if p.Incoming != 0 {
		if err := m.resumeIncoming(ctx, p.Incoming); err != nil {
			conn.Close()
			m.Kill()
			<-m.exit.Done()
			return nil, err
		}
	}
	return m, nil
}

// vsockConnectTimeout bounds the wait for the guest supervisor to listen
// on vsock: the whole boot, under emulation on a loaded machine.
const vsockConnectTimeout = 2 * time.Minute

// openChannel connects the host channel the plan has: the virtio-serial
// port's socket, the guest's vsock port (ShapeVZ), or none (ShapeVZ on a
// host without vhost-vsock).
func (m *machine) openChannel(ctx context.Context) (io.ReadWriteCloser, error) {
	switch {
	case m.plan.Channel != "":
		return m.dialChannel(ctx)
	case m.plan.VsockCID != 0:
		ctx, cancel := context.WithTimeout(ctx, vsockConnectTimeout)
		defer cancel()
		return connectVsock(ctx, m.plan.VsockCID, vm.VsockPort, m.exit.Done())
	}
	return &noChannel{vmDone: m.exit.Done(), closed: make(chan struct{})}, nil
}

// noChannel is the Conn of a machine without a host channel: reads wait
// until QEMU exits (then EOF) or Close, writes fail.
type noChannel struct {
	vmDone    <-chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *noChannel) Read([]byte) (int, error) {
	select {
	case <-c.vmDone:
		return 0, io.EOF
	case <-c.closed:
		return 0, os.ErrClosed
	}
}

func (c *noChannel) Write([]byte) (int, error) {
	return 0, errors.New("this VM has no host channel: no vsock device (the host has no usable /dev/vhost-vsock)")
}

func (c *noChannel) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (m *machine) startVirtiofsd(job virtiofsdJob) error {
	args := []string{"--socket-path=" + job.Socket, "--shared-dir=" + job.Share.HostPath, "--cache=auto", "--sandbox=none"}
	if job.Share.ReadOnly {
		args = append(args, "--readonly")
	}
	cmd := exec.Command(job.Binary, args...)
	cmd.SysProcAttr = procAttr(m.plan.ParentDeath)
	cmd.Stderr = m.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start virtiofsd for share %s: %w", job.Share.Tag, err)
	}
	m.helpers = append(m.helpers, cmd)
	go cmd.Wait()
	return nil
}

// dialChannel connects to the virtio-serial socket, which QEMU creates a
// moment after it starts.
func (m *machine) dialChannel(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		conn, err := net.Dial("unix", m.plan.Channel)
		if err == nil {
			return conn, nil
		}
		select {
		case <-m.exit.Done():
			return nil, fmt.Errorf("qemu exited before the guest channel opened: %s", strings.TrimSpace(m.stderr.String()))
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to the guest channel %s: %w", m.plan.Channel, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (m *machine) cleanup() {
	m.once.Do(func() {
		for _, h := range m.helpers {
			if h.Process != nil {
				h.Process.Kill()
			}
		}
		os.Remove(m.plan.PIDFile)
		if m.plan.Channel != "" {
			os.Remove(m.plan.Channel)
		}
		os.Remove(m.plan.QMP)
		os.Remove(m.plan.QMPEvents)
		if m.sockDir != "" {
			os.RemoveAll(m.sockDir)
		}
	})
}

func (m *machine) Conn() io.ReadWriteCloser { return m.conn }
func (m *machine) PID() int                 { return m.cmd.Process.Pid }

func (m *machine) Wait(ctx context.Context) error { return m.exit.Wait(ctx) }

// Stop presses the power button (QMP system_powerdown) and kills QEMU
// when the guest has not powered off in time (vm.Exit.PowerOff). Asking
// the guest through its protocol first is the caller's (app/sandbox).
func (m *machine) Stop(ctx context.Context) error {
	if m.exit.PowerOff(ctx, func() error {
		m.log.Info("pressing the power button")
		return qmpCommand(m.plan.QMP, "system_powerdown")
	}) {
		return nil
	}
	m.log.Warn("guest did not power off; killing qemu")
	if err := m.Kill(); err != nil {
		return err
	}
	<-m.exit.Done()
	return nil
}

func (m *machine) Kill() error {
	if m.exit.Exited() {
		return nil
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (m *machine) Stats() (vm.Stats, error) {
	if m.exit.Exited() {
		return vm.Stats{}, vm.ErrNotRunning
	}
	return procStats(m.cmd.Process.Pid)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// consoleMarker begins each console log file started after older console
// output was dropped.
const consoleMarker = "[sandbar: earlier console output trimmed]\n"

// consoleDrainWait bounds how long the console's last bytes are read
// after QEMU exits.
const consoleDrainWait = 2 * time.Second

// startConsole makes the console socket when the plan has a console,
// starts copying Sandbar's end into the capped log (this boot's console
// only), and returns QEMU's end; nil when there is no console.
func (m *machine) startConsole() (*os.File, error) {
	if m.plan.ConsoleFile < 0 {
		return nil, nil
	}
	if m.plan.Incoming == 0 { // a resumed guest's console goes on
		if err := caplog.Remove(m.plan.Console); err != nil {
			return nil, fmt.Errorf("remove the last boot's console log: %w", err)
		}
	}
	log, err := caplog.Open(m.plan.Console, m.plan.ConsoleMax, []byte(consoleMarker), 0)
	if err != nil {
		return nil, fmt.Errorf("console log: %w", err)
	}
	// Close-on-exec under ForkLock, as the standard library makes its
	// own descriptors (macOS has no SOCK_CLOEXEC): no other child may
	// keep QEMU's end open.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("console socket: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "console")
	conn, err := net.FileConn(ours)
	ours.Close() // FileConn has its own copy
	if err != nil {
		syscall.Close(fds[1])
		log.Close()
		return nil, fmt.Errorf("console socket: %w", err)
	}
	m.console, m.consoleDone = conn, make(chan struct{})
	go func() {
		defer close(m.consoleDone)
		if err := caplog.Drain(conn, log); err != nil {
			m.log.Warn("the console log stopped; the guest's console is read and dropped", "err", err)
		}
	}()
	return os.NewFile(uintptr(fds[1]), "console-qemu"), nil
}

// stopConsole waits for the console's last bytes, at most
// consoleDrainWait, and closes Sandbar's end.
func (m *machine) stopConsole() {
	if m.console == nil {
		return
	}
	m.console.SetReadDeadline(time.Now().Add(consoleDrainWait))
	<-m.consoleDone
	m.console.Close()
}
