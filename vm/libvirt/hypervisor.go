package libvirt

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"sandbar/vm"
)

// Config is one host.
type Config struct {
	// Name is the person's name for the host (sandbar hosts add NAME).
	Name   string
	Target Target
	Auth   Auth
	// Dir is Sandbar's folder on the host: absolute, or relative to the
	// SSH user's home; "" is DefaultDir.
	Dir string
	// Owner says who runs the VMs (this machine and process), written in
	// every domain's metadata.
	Owner  string
	Logger *slog.Logger
}

// DefaultDir is Sandbar's folder on a host, under the SSH user's home.
const DefaultDir = ".cache/sandbar-host"

// Hypervisor boots guests on one libvirt host.
type Hypervisor struct {
	cfg    Config
	log    *slog.Logger
	hashes hashCache

	uploadMu sync.Mutex

	mu     sync.Mutex
	facts  *Facts
	status *vm.Status

	// uploaded counts the bytes sent to the host's cache, for tests and
	// benchmarks (a second session's upload is 0).
	uploaded atomic.Int64
}

// New returns the backend for one host; nothing connects until Check or
// Boot.
func New(cfg Config) *Hypervisor {
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hypervisor{cfg: cfg, log: log.With("host", cfg.Name)}
}

// Name implements vm.Hypervisor: "remote:NAME".
func (h *Hypervisor) Name() string { return "remote:" + h.cfg.Name }

// Uploaded is how many bytes Boot has sent to the host's cache so far.
func (h *Hypervisor) Uploaded() int64 { return h.uploaded.Load() }

// Info implements vm.Hypervisor: the channel is the virtio-serial port,
// the NIC a stream of length-prefixed frames (QEMU's, as vm/qemu's),
// carried back over SSH; there are no shares (the workspace is a disk).
func (h *Hypervisor) Info() vm.Info {
	return vm.Info{
		Channel:       vm.ChannelSerial,
		Networks:      []vm.Network{vm.NetworkOff, vm.NetworkSocket},
		SocketFraming: vm.FramingStream,
		Features: vm.Features{
			// The VM is a process on another machine; the connection's
			// end ends it (autodestroy, and the guard).
			OwnProcess:    false,
			DiesWithOwner: true,
		},
	}
}

// Check connects, checks the host (Facts) and says what it found. A
// good verdict is kept for the life of the value; a bad one is asked
// again next time (the host may be back).
func (h *Hypervisor) Check(ctx context.Context) vm.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != nil {
		return *h.status
	}
	f, err := h.Probe(ctx)
	if err != nil {
		return vm.Status{Detail: err.Error()}
	}
	st := vm.Status{Available: true, Accelerated: f.KVM, Detail: h.cfg.Name + ": " + f.Summary()}
	h.facts, h.status = &f, &st
	return st
}

// Probe connects and checks the host now, keeping nothing.
func (h *Hypervisor) Probe(ctx context.Context) (Facts, error) {
	return h.probe(ctx, "")
}

// Trust is Probe for a host not yet in known_hosts whose key's
// fingerprint the person confirmed: that key is added to known_hosts.
func (h *Hypervisor) Trust(ctx context.Context, fingerprint string) (Facts, error) {
	return h.probe(ctx, fingerprint)
}

func (h *Hypervisor) probe(ctx context.Context, trust string) (Facts, error) {
	c, err := connect(ctx, h.cfg.Target, h.cfg.Auth, trust)
	if err != nil {
		return Facts{}, err
	}
	defer c.Close()
	return facts(ctx, c, h.cfg.Dir)
}

// hostFacts are the facts of the last good Check.
func (h *Hypervisor) hostFacts(ctx context.Context) (Facts, error) {
	st := h.Check(ctx)
	if !st.Available {
		return Facts{}, fmt.Errorf("%s: %w", st.Detail, vm.ErrUnavailable)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return *h.facts, nil
}

// Boot uploads what the host lacks, makes the scratch disks there,
// starts the domain and brings its channel, console and NIC back here.
func (h *Hypervisor) Boot(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	f, err := h.hostFacts(ctx)
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(vm.Host{CPUs: f.CPUs, Memory: f.MemoryBytes}); err != nil {
		return nil, err
	}
	if len(spec.Shares) > 0 {
		return nil, fmt.Errorf("a remote host mounts no shares: give the workspace as a disk: %w", vm.ErrInvalidSpec)
	}
	for _, p := range []string{spec.Kernel, spec.Initramfs} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("guest image file %s is missing: run `sandbar image build`: %w", p, vm.ErrNotFound)
		}
	}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create VM directory: %w", err)
	}
	start := time.Now()
	c, err := connect(ctx, h.cfg.Target, h.cfg.Auth, "")
	if err != nil {
		return nil, err
	}
	connected := time.Since(start)
	m, err := h.boot(ctx, c, f, spec)
	if err != nil {
		c.Close()
		return nil, err
	}
	h.log.Info("domain started", "vm", spec.Name, "took", time.Since(start).Round(time.Millisecond), "connect", connected.Round(time.Millisecond))
	return m, nil
}

// HostResources implements vm.HostReporter: the host's CPUs, memory and
// free memory now, as libvirt's node info reports them (checked afresh:
// free memory changes).
func (h *Hypervisor) HostResources(ctx context.Context) (vm.Resources, error) {
	f, err := h.Probe(ctx)
	if err != nil {
		return vm.Resources{}, err
	}
	return vm.Resources{CPUs: f.CPUs, Memory: f.MemoryBytes, FreeMemory: f.FreeMemory}, nil
}

var (
	_ vm.Hypervisor   = (*Hypervisor)(nil)
	_ vm.HostReporter = (*Hypervisor)(nil)
)
