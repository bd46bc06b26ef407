// Package vmtest is the thin fake at the VM edge that DESIGN.md allows in
// unit tests: a Hypervisor whose Machines run the real guest supervisor
// in-process over net.Pipe, with a host directory as the workspace: a
// session's base disk unpacked with debugfs (UnpackBase) once per VM
// directory, standing for the guest's copy-on-write layer, else the
// Spec's "workspace" share, else a fresh temp dir. Everything above the
// VM (sandbox, session manager, UI) can then be tested against the real
// protocol and real child processes without booting a kernel.
//
// It is not a hypervisor and isolates nothing: its "guest" runs as this
// user on the host. Nothing outside tests may use it.
package vmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"sandbar/guest/supervisor"
	"sandbar/vm"
)

// Hypervisor boots in-process machines.
type Hypervisor struct {
	// Logger receives the supervisor's log.
	Logger *slog.Logger
	// BootErr, when set, is returned by Boot.
	BootErr error
	// NeverReady makes machines that run but never serve (a guest stuck in
	// boot), for timeout tests.
	NeverReady bool
	// NetError, when set, is what the machines' system:ready says of a
	// network that did not come up (supervisor.Config.NetError).
	NetError string

	mu     sync.Mutex
	booted []*Machine
}

// Name implements vm.Hypervisor.
func (h *Hypervisor) Name() string { return "vmtest" }

// Check implements vm.Hypervisor: always available, never accelerated.
func (h *Hypervisor) Check(context.Context) vm.Status {
	return vm.Status{Available: true, Detail: "in-process test machines"}
}

// Info implements vm.Hypervisor with what a real backend would put on
// the guest's command line; the channel is left to the guest to find
// (the in-process guest reads no command line). The in-process guest has
// no NIC: a socket-attached one is accepted and carries nothing, so the
// network's host side runs as it does for a real VM. Its machines live
// in this process and die with it.
func (h *Hypervisor) Info() vm.Info {
	return vm.Info{
		Channel:       vm.ChannelAuto,
		ShareKinds:    []vm.ShareKind{vm.ShareVirtiofs},
		Networks:      []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket},
		NATNet:        "dhcp",
		SocketFraming: vm.FramingStream,
		Features:      vm.Features{DiesWithOwner: true},
	}
}

var _ vm.Hypervisor = (*Hypervisor)(nil)

// Booted returns the machines booted so far.
func (h *Hypervisor) Booted() []*Machine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Machine(nil), h.booted...)
}

// Boot implements vm.Hypervisor: it validates spec like a real backend
// and starts the supervisor on one end of a pipe.
func (h *Hypervisor) Boot(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	if h.BootErr != nil {
		return nil, h.BootErr
	}
	if err := spec.Validate(vm.Host{}); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, err
	}
	ws := ""
	for _, sh := range spec.Shares {
		if sh.Tag == "workspace" {
			ws = sh.HostPath
		}
	}
	if base := workspaceDisk(spec); base != "" {
		// The guest mounts the base disk under a layer on its scratch
		// disk, which outlives a reboot: here the disk's files are copied
		// out once per VM directory, and the copy is the workspace.
		d, err := unpackWorkspace(ctx, base, spec.Dir)
		if err != nil {
			return nil, err
		}
		ws = d
	}
	if ws == "" {
		d, err := os.MkdirTemp(spec.Dir, "workspace-")
		if err != nil {
			return nil, err
		}
		ws = d
	}
	home, err := os.MkdirTemp(spec.Dir, "home-")
	if err != nil {
		return nil, err
	}
	hostEnd, guestEnd := net.Pipe()
	m := &Machine{
		Spec: spec,
		Sys:  &supervisor.HostSystem{Home: home},
		conn: hostEnd,
		exit: vm.NewExit(),

		diskEvents: make(chan vm.DiskEvent, 1),
	}
	if spec.ConsoleLog != "" {
		os.WriteFile(spec.ConsoleLog, []byte("vmtest: in-process machine\n"), 0o644)
	}
	log := h.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		var err error
		defer func() { m.exit.End(err) }()
		defer m.closeDiskEvents()
		defer guestEnd.Close()
		if h.NeverReady {
			<-sctx.Done()
			err = errors.New("killed")
			return
		}
		s := supervisor.New(supervisor.Config{Workspace: ws, Sys: clockSys{m.Sys, m}, Logger: log, NetError: h.NetError})
		err = s.Serve(sctx, guestEnd)
		if sctx.Err() != nil {
			err = errors.New("killed")
		}
	}()
	h.mu.Lock()
	h.booted = append(h.booted, m)
	h.mu.Unlock()
	return m, nil
}

// workspaceDisk is the path of the disk the guest would mount at
// /workspace (sandbar.workspace on the command line), "" for none.
func workspaceDisk(spec vm.Spec) string {
	for _, a := range spec.CommandLine {
		dev, ok := strings.CutPrefix(a, "sandbar.workspace=/dev/")
		if !ok {
			continue
		}
		for i, d := range spec.Disks {
			if vm.DiskName(i) == dev {
				return d.Path
			}
		}
	}
	return ""
}

// unpackWorkspace copies the clone on the ext4 disk base into
// dir/vmtest-workspace, once (see UnpackBase).
func unpackWorkspace(ctx context.Context, base, dir string) (string, error) {
	ws := filepath.Join(dir, "vmtest-workspace")
	if _, err := os.Stat(ws); err == nil {
		return ws, nil
	}
	if err := UnpackBase(ctx, base, ws); err != nil {
		return "", err
	}
	return ws, nil
}

// UnpackBase copies the clone on a base disk (its /repo, which the guest
// mounts at /workspace) into dest with e2fsprogs' debugfs, owned by this
// user and writable: the copy stands for the guest's writable layer.
func UnpackBase(ctx context.Context, base, dest string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".vmtest-workspace-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	out, err := exec.CommandContext(ctx, "debugfs", "-R", `rdump /repo "`+tmp+`"`, base).CombinedOutput()
	if err != nil {
		return fmt.Errorf("vmtest: unpack the workspace disk %s with debugfs (install e2fsprogs): %v: %s", base, err, out)
	}
	root := filepath.Join(tmp, "repo")
	// rdump writes a file whose data sits in its inode (ext4 inline
	// data) padded to 60 bytes; the sizes come from a listing.
	var cmds strings.Builder
	var dirs []string
	uid, gid := os.Getuid(), os.Getgid()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// rdump kept the disk's modes (read-only packs) and, for root,
		// its owner: the in-process agent runs as this user.
		os.Lchown(p, uid, gid)
		if d.Type()&fs.ModeSymlink == 0 {
			if fi, err := d.Info(); err == nil {
				os.Chmod(p, fi.Mode().Perm()|0o200)
			}
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			dirs = append(dirs, rel)
			fmt.Fprintf(&cmds, "ls -p \"/repo/%s\"\n", filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vmtest: unpack %s: %w", base, err)
	}
	cmd := exec.CommandContext(ctx, "debugfs", "-f", "-", base)
	cmd.Stdin = strings.NewReader(cmds.String())
	listing, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("vmtest: list %s with debugfs: %w", base, err)
	}
	i := -1
	for _, line := range strings.Split(string(listing), "\n") {
		if strings.HasPrefix(line, "debugfs: ls -p ") {
			i++
			continue
		}
		// /inode/mode/uid/gid/name/size/
		f := strings.Split(line, "/")
		if i < 0 || i >= len(dirs) || len(f) < 8 || !strings.HasPrefix(f[2], "100") {
			continue
		}
		name := strings.Join(f[5:len(f)-2], "/")
		size, err := strconv.ParseInt(f[len(f)-2], 10, 64)
		if err != nil {
			continue
		}
		p := filepath.Join(root, dirs[i], name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() != size {
			if err := os.Truncate(p, size); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(root, dest); err != nil {
		return fmt.Errorf("vmtest: the workspace disk %s has no /repo: %w", base, err)
	}
	return nil
}

// Machine is an in-process guest.
type Machine struct {
	Spec vm.Spec
	Sys  *supervisor.HostSystem

	conn   net.Conn
	cancel context.CancelFunc
	exit   *vm.Exit

	clockMu sync.Mutex
	clock   []time.Time
	clockCh chan struct{} // closed and replaced at each setting

	diskMu     sync.Mutex
	diskEvents chan vm.DiskEvent // closed (and nil) once the machine is done
	paused     bool
}

var _ vm.DiskPauser = (*Machine)(nil)

// DiskEvents implements vm.DiskPauser.
func (m *Machine) DiskEvents() <-chan vm.DiskEvent {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	return m.diskEvents
}

// PauseOnFullDisk reports a pause on a full disk, as QEMU's would: the
// in-process guest itself runs on (a thin fake: what is tested is what
// Sandbar does with the event).
func (m *Machine) PauseOnFullDisk() { m.setPaused(true) }

// Paused says whether the machine is paused (PauseOnFullDisk, no Resume
// since).
func (m *Machine) Paused() bool {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	return m.paused
}

// Resume implements vm.DiskPauser.
func (m *Machine) Resume(context.Context) error {
	if m.exit.Exited() {
		return vm.ErrNotRunning
	}
	m.setPaused(false)
	return nil
}

func (m *Machine) setPaused(p bool) {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	if m.diskEvents == nil {
		return
	}
	m.paused = p
	vm.SendLatest(m.diskEvents, vm.DiskEvent{Paused: p, NoSpace: p, Disk: "disk1", Time: time.Now()})
}

func (m *Machine) closeDiskEvents() {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	close(m.diskEvents)
	m.diskEvents = nil
}

// clockSys is the machine's System, recording where the supervisor sets
// the guest's clock (which HostSystem leaves alone).
type clockSys struct {
	*supervisor.HostSystem
	m *Machine
}

func (s clockSys) SetTime(t time.Time) error {
	s.m.clockMu.Lock()
	s.m.clock = append(s.m.clock, t)
	if s.m.clockCh != nil {
		close(s.m.clockCh)
		s.m.clockCh = nil
	}
	s.m.clockMu.Unlock()
	return s.HostSystem.SetTime(t)
}

// Clock returns the times the guest's clock was set to, in order, and a
// channel closed at the next setting.
func (m *Machine) Clock() ([]time.Time, <-chan struct{}) {
	m.clockMu.Lock()
	defer m.clockMu.Unlock()
	if m.clockCh == nil {
		m.clockCh = make(chan struct{})
	}
	return append([]time.Time(nil), m.clock...), m.clockCh
}

// Conn implements vm.Machine.
func (m *Machine) Conn() io.ReadWriteCloser { return m.conn }

// Wait implements vm.Machine: nil after a protocol shutdown.
func (m *Machine) Wait(ctx context.Context) error { return m.exit.Wait(ctx) }

// Stop implements vm.Machine: an in-process guest has no power button, so
// it is killed at once (the protocol's shutdown, which the sandbox sends
// first, is its graceful way out).
func (m *Machine) Stop(context.Context) error { return m.Kill() }

// Kill implements vm.Machine.
func (m *Machine) Kill() error {
	m.cancel()
	m.conn.Close()
	<-m.exit.Done()
	return nil
}

// Stats implements vm.Machine with this process's figures.
func (m *Machine) Stats() (vm.Stats, error) {
	if m.exit.Exited() {
		return vm.Stats{}, fmt.Errorf("vmtest machine: %w", vm.ErrNotRunning)
	}
	return vm.Stats{}, nil
}

// PID implements vm.Machine: 0, the VM runs in-process.
func (m *Machine) PID() int { return 0 }
