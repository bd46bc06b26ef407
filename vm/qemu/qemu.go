// Package qemu boots Sandbar guests with qemu-system: -M microvm on x86-64
// (-M virt on arm64), KVM when a trial boot proves it works, software
// emulation (TCG) otherwise.
//
// It is the Linux backend and also runs on a Mac with QEMU installed. It
// translates a vm.Spec into a plain plan (a command line and the files
// around it, tested without running anything), owns the QEMU process
// (and any virtiofsd) for its life, records it in the VM directory's pid
// file, and ends one that outlived its owner (ReapOrphan).
//
// It is not a guest-protocol speaker: it connects the host channel and
// hands it over as Machine.Conn, and never writes a protocol line on it
// (app/sandbox does). It knows nothing of sessions, images or networks
// beyond the Spec it is given.
package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"sandbar/vm"
)

// Config tells the backend where things are.
type Config struct {
	// Binary is the qemu-system executable; default qemu-system-x86_64 or
	// qemu-system-aarch64 for the host, looked up on PATH.
	Binary string
	// Accel forces "kvm" or "tcg"; "" decides by a trial boot.
	Accel string
	// StateDir keeps the cached KVM verdict.
	StateDir string
	// TrialImage returns a kernel and initramfs to prove KVM with (the
	// guest image's); an error means none is available yet.
	TrialImage func() (kernel, initramfs string, err error)
	// Share forces "9p" for workspace shares; "" uses virtio-fs when a
	// usable virtiofsd is installed, else 9p.
	Share string
	// RuntimeDir holds per-VM sockets when the VM directory's path is too
	// long for a unix socket; default os.TempDir().
	RuntimeDir string
	// Shape is "" for Sandbar's own machine, or ShapeVZ for a machine
	// shaped like Virtualization.framework's, for tests (see ShapeVZ).
	Shape string
	// NoParentDeath starts QEMU (and its virtiofsd) without Linux's
	// parent-death signal, as it runs on macOS, which has none: a QEMU
	// whose owner is killed keeps running, and only ReapOrphan ends it.
	// It is for tests of that path; Sandbar never sets it.
	NoParentDeath bool
	Logger        *slog.Logger
}

// Hypervisor is the QEMU backend.
type Hypervisor struct {
	cfg    Config
	log    *slog.Logger
	mu     sync.Mutex
	status *vm.Status

	fsdOnce sync.Once
	fsd     string
}

// New returns the backend; nothing runs until Check or Boot.
func New(cfg Config) *Hypervisor {
	if cfg.Binary == "" {
		cfg.Binary = "qemu-system-x86_64"
		if runtime.GOARCH == "arm64" {
			cfg.Binary = "qemu-system-aarch64"
		}
	}
	if cfg.RuntimeDir == "" {
		cfg.RuntimeDir = os.TempDir()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hypervisor{cfg: cfg, log: log}
}

// Name implements vm.Hypervisor.
func (h *Hypervisor) Name() string { return "qemu" }

func (h *Hypervisor) arch() string {
	if filepath.Base(h.cfg.Binary) == "qemu-system-aarch64" {
		return "arm64"
	}
	return "amd64"
}

// Check says whether QEMU is usable and whether guests get KVM; the
// verdict is computed once per process (and the KVM trial cached on disk).
func (h *Hypervisor) Check(ctx context.Context) vm.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != nil {
		return *h.status
	}
	st := h.check(ctx)
	if st.Available {
		h.status = &st
	}
	return st
}

func (h *Hypervisor) check(ctx context.Context) vm.Status {
	bin, err := exec.LookPath(h.cfg.Binary)
	if err != nil {
		pkg := "qemu-system-x86"
		if h.arch() == "arm64" {
			pkg = "qemu-system-arm"
		}
		return vm.Status{Detail: fmt.Sprintf("%s is not installed: run `sudo apt install %s` (macOS: `brew install qemu`)", h.cfg.Binary, pkg)}
	}
	h.cfg.Binary = bin
	switch h.cfg.Accel {
	case "tcg":
		return vm.Status{Available: true, Detail: "QEMU with software emulation (forced); guests run ~10x slower than with KVM"}
	case "kvm":
		return vm.Status{Available: true, Accelerated: true, Detail: "QEMU with KVM (forced)"}
	}
	ok, why := h.kvmVerdict(ctx)
	if ok {
		return vm.Status{Available: true, Accelerated: true, Detail: "QEMU with KVM: " + why}
	}
	return vm.Status{Available: true, Detail: why + "; falling back to software emulation, ~10x slower"}
}

// virtiofsd returns the virtio-fs daemon to use, or "" for 9p. Only the
// Rust virtiofsd serves an unprivileged user (--sandbox=none) and a
// read-only share; the legacy C one that older QEMU packages ship in
// /usr/lib/qemu needs root, so it is passed over. The answer is computed
// once.
func (h *Hypervisor) virtiofsd() string {
	h.fsdOnce.Do(func() {
		if h.cfg.Share == "9p" {
			return
		}
		for _, p := range []string{"virtiofsd", "/usr/libexec/virtiofsd", "/usr/lib/qemu/virtiofsd"} {
			path, err := exec.LookPath(p)
			if err != nil {
				continue
			}
			out, _ := exec.Command(path, "--help").CombinedOutput()
			if bytes.Contains(out, []byte("--shared-dir")) {
				h.fsd = path
				return
			}
			h.log.Debug("passing over a virtiofsd without --shared-dir (legacy, needs root)", "path", path)
		}
	})
	return h.fsd
}

// Boot starts QEMU for spec and connects to the guest channel. It returns
// once the hypervisor runs; the caller waits for the guest's system:ready
// on Conn (see vm.WaitReady).
func (h *Hypervisor) Boot(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	m, err := h.boot(ctx, spec, bootOpts{})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Resume implements vm.Resumer: QEMU starts from spec waiting for a
// migration (-incoming defer), the host's channel connects, and the state
// file is loaded through an inherited descriptor (QEMU 7.2 has no file:
// URI); the guest then runs on. A missing or unreadable state, or one
// QEMU refuses, is vm.ErrBadState.
func (h *Hypervisor) Resume(ctx context.Context, spec vm.Spec, statePath string) (vm.Machine, error) {
	if h.cfg.Shape == ShapeVZ {
		// The guest's vsock connection would not survive the old
		// vhost-vsock device, and the supervisor ends at its loss.
		return nil, fmt.Errorf("resume needs Sandbar's own machine (a serial channel), not the vz shape: %w", vm.ErrUnsupported)
	}
	if statePath == "" {
		return nil, fmt.Errorf("%w: no state file named", vm.ErrBadState)
	}
	m, err := h.boot(ctx, spec, bootOpts{state: statePath})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// bootOpts say how boot starts QEMU besides the Spec.
type bootOpts struct {
	// state is a saved state to load (a resume, or a template's
	// devices); "" boots.
	state string
	// memFile and memShared back the RAM with a file (see
	// settings.MemFile); ignoreShared leaves that RAM out of the
	// migration stream.
	memFile      string
	memShared    bool
	ignoreShared bool
}

// boot starts QEMU for spec: a fresh boot, or with o.state a resume.
func (h *Hypervisor) boot(ctx context.Context, spec vm.Spec, o bootOpts) (*machine, error) {
	statePath := o.state
	st := h.Check(ctx)
	if !st.Available {
		return nil, fmt.Errorf("%s: %w", st.Detail, vm.ErrUnavailable)
	}
	if err := spec.Validate(vm.Host{CPUs: runtime.NumCPU(), Memory: hostMemory()}); err != nil {
		return nil, err
	}
	for _, f := range []string{spec.Kernel, spec.Initramfs} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("guest image file %s is missing: run `sandbar image build`: %w", f, vm.ErrNotFound)
		}
	}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create VM directory: %w", err)
	}
	sockDir := spec.Dir
	if len(filepath.Join(spec.Dir, "channel.sock")) > 100 {
		d, err := os.MkdirTemp(h.cfg.RuntimeDir, "sandbar-vm-")
		if err != nil {
			return nil, err
		}
		sockDir = d
	}
	set := settings{
		Binary: h.cfg.Binary, Arch: h.arch(), KVM: st.Accelerated,
		TSCkHz: tscKHz(), Virtiofsd: h.virtiofsd(), SocketDir: sockDir, Shape: h.cfg.Shape,
		ParentDeath: h.Info().Features.DiesWithOwner,
		MemFile:     o.memFile, MemShared: o.memShared,
	}
	if h.cfg.Shape == ShapeVZ && VhostVsock() {
		set.VsockCID = guestCID()
	}
	p, err := buildPlan(spec, set)
	if err != nil {
		return nil, err
	}
	p.IgnoreShared = o.ignoreShared
	if statePath != "" {
		f, err := openState(statePath)
		if err != nil {
			return nil, err
		}
		defer f.Close() // QEMU has its own copy once it started
		p.Incoming = 3 + len(p.ExtraFiles)
		p.ExtraFiles = append(p.ExtraFiles, f)
		p.Args = append(p.Args, "-incoming", "defer")
	}
	return start(ctx, p, spec, sockDir != spec.Dir, h.log.With("vm", spec.Name))
}

// openState opens a state file Suspend wrote, saying in words what is
// wrong with one that cannot be.
func openState(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: the state file %s is missing", vm.ErrBadState, path)
		}
		return nil, fmt.Errorf("%w: %v", vm.ErrBadState, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		f.Close()
		return nil, fmt.Errorf("%w: the state file %s is empty or not a file", vm.ErrBadState, path)
	}
	return f, nil
}

// ErrKVMTrial is returned when a trial boot under KVM failed.
var ErrKVMTrial = errors.New("KVM trial boot failed")
