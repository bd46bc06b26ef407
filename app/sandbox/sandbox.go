// Package sandbox boots the guest image as a VM and drives it: it turns an
// image and a few limits into a vm.Spec for what the Hypervisor offers
// (its vm.Info), boots it, waits for the guest supervisor's system:ready
// (with the console's tail in the error when it never comes), speaks the
// protocol to it through a Client, and stops it gracefully (the
// protocol's shutdown, then the machine's power button, then a kill).
// It is what `sandbar vm run`, the session manager and the tests and
// benchmarks boot guests with, and the only host package that speaks
// guest/protocol.
//
// It is not a session manager: it knows nothing of sessions, projects,
// git, secrets or the store, and it owns no VM beyond the one Sandbox it
// returns. It is not a hypervisor either: how a VM runs is vm's.
package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandbar/guest/image"
	"sandbar/guest/protocol"
	"sandbar/vm"
	"sandbar/vm/caplog"
)

// Defaults for Options left zero.
const (
	DefaultCPUs         = 2
	DefaultMemory       = 2048 * vm.MiB
	DefaultReadyTimeout = 2 * time.Minute
	// ShareTag is the tag the guest mounts at /workspace.
	ShareTag = "workspace"
	// ScratchFile is the scratch disk's name in the VM directory when
	// Options.Scratch names none (a session's is config.SessionDir's).
	ScratchFile = "scratch.img"
	// ConsoleFile is the console log's name in the VM directory when
	// Options.Console names none (a session's is config.SessionDir's).
	ConsoleFile = "console.log"
)

// Options say what to boot besides the image.
type Options struct {
	// Name labels the VM in logs.
	Name string
	// Dir is the directory the VM owns (console log, sockets, pid file,
	// the scratch disk by default). It is created if missing.
	Dir    string
	CPUs   int
	Memory uint64 // bytes
	// ScratchSize, when positive, gives the guest a writable scratch disk
	// of that many bytes (a sparse file, Dir/scratch.img unless Scratch
	// names another) for the root overlay's upper layer; the guest formats
	// it on first boot and it keeps its contents across boots. Zero means
	// the overlay lives in guest memory and is lost at power-off.
	ScratchSize int64
	Scratch     string
	// Console receives the guest's serial console; default
	// Dir/console.log. ConsoleMax caps it together with its older copy
	// Console.1 (vm.DefaultConsoleMax when 0).
	Console    string
	ConsoleMax int64
	// Workspace is a read-only ext4 disk holding a clone (see
	// workspace.Mirror.BuildBase), mounted at /workspace under a writable
	// layer on the scratch disk, which it needs. Exclusive with Share.
	Workspace string
	// Root is a read-only ext4 disk holding another image's root file
	// system (a project's environment, such as app/env/ociimage writes)
	// for the guest to run on instead of the image's own; "" boots the
	// image's. Sandbar's kernel, init and supervisor stay the image's,
	// and its own root is attached as well, read-only, for Sandbar's
	// tools (see vm.GuestOptions.Tools).
	Root string
	// Env is a prepared environment's read-only disk (see
	// vm.GuestOptions.Env and Capture): the changes its setup made to the
	// root, and the ignored files it left in the workspace, under this
	// guest's own layers. It needs the scratch disk.
	Env string
	// Share is a host directory mounted at /workspace; "" for none.
	Share         string
	ShareReadOnly bool
	// Network gives the guest the hypervisor's own NAT, which reaches the
	// host's loopback: for `sandbar vm run` and benchmarks, never for a
	// session (sessions use NIC).
	Network bool
	// NIC attaches the guest's card to a network of the caller's (see
	// NICPair and app/net/netstack); NICArg is its sandbar.net kernel
	// argument. Exclusive with Network.
	NIC    *vm.NIC
	NICArg string
	// ReadyTimeout bounds boot → system:ready.
	ReadyTimeout time.Duration
	// OnEvent receives the guest's events other than exec replies (see
	// ClientOptions.OnEvent).
	OnEvent func(protocol.Event)
	// KernelArgs are appended to the guest's kernel command line
	// (sandbar.debug=1 for a chattier console, say).
	KernelArgs []string
	// Time is the guest's clock at boot; zero means now.
	Time time.Time
	// Template is a template directory (TemplateDir) to start the VM
	// from instead of booting it, where the hypervisor is a
	// vm.Templater and the VM's shape is the template's; otherwise, or
	// when the template is missing or damaged, the VM boots cold and
	// Sandbox.TemplateNote says why.
	Template string
	Logger   *slog.Logger
}

func (o *Options) defaults() {
	if o.CPUs == 0 {
		o.CPUs = DefaultCPUs
	}
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.ScratchSize > 0 && o.Scratch == "" && o.Dir != "" {
		o.Scratch = filepath.Join(o.Dir, ScratchFile)
	}
	if o.Console == "" && o.Dir != "" {
		o.Console = filepath.Join(o.Dir, ConsoleFile)
	}
	if o.Name == "" {
		o.Name = filepath.Base(o.Dir)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// SpecFor translates an image and options into the Spec to boot on a
// backend that offers info (vm.Hypervisor.Info): disks in the order root
// (vda, read-only), agent (vdb, read-only), scratch (vdc), workspace base
// (vdd, read-only), then, when Options.Root names another root, the
// image's own root (read-only, for Sandbar's tools); the workspace share;
// the guest's kernel arguments,
// which tell the guest the backend's channel, share kind and NAT
// addressing. It is pure.
func SpecFor(img *image.Image, info vm.Info, o Options) (vm.Spec, error) {
	o.defaults()
	if img == nil {
		return vm.Spec{}, fmt.Errorf("no guest image: run `sandbar image build`: %w", image.ErrNotBuilt)
	}
	if o.Dir == "" {
		return vm.Spec{}, errors.New("sandbox: Options.Dir is required")
	}
	spec := vm.Spec{
		Name:       o.Name,
		Kernel:     img.Kernel,
		Initramfs:  img.Initramfs,
		CPUs:       o.CPUs,
		Memory:     o.Memory,
		Network:    vm.NetworkOff,
		ConsoleLog: o.Console,
		ConsoleMax: o.ConsoleMax,
		Dir:        o.Dir,
		Disks: []vm.Disk{
			{Path: img.RootFS, ReadOnly: true},
			{Path: img.AgentDisk, ReadOnly: true},
		},
	}
	if o.Root != "" {
		spec.Disks[0].Path = o.Root
	}
	g := vm.GuestOptions{Root: 0, Agent: 1, Scratch: -1, Workspace: -1, Share: vm.ShareNone, Net: "none", Time: o.Time, Channel: info.Channel}
	if g.Time.IsZero() {
		g.Time = time.Now()
	}
	if o.ScratchSize > 0 {
		spec.Disks = append(spec.Disks, vm.Disk{Path: o.Scratch})
		g.Scratch = 2
	}
	if o.Workspace != "" {
		if o.ScratchSize <= 0 {
			return vm.Spec{}, errors.New("sandbox: a workspace disk needs a scratch disk for its writable layer")
		}
		if o.Share != "" {
			return vm.Spec{}, errors.New("sandbox: a workspace disk and a workspace share are exclusive")
		}
		spec.Disks = append(spec.Disks, vm.Disk{Path: o.Workspace, ReadOnly: true})
		g.Workspace = len(spec.Disks) - 1
	}
	if o.Root != "" {
		if o.ScratchSize <= 0 {
			// The image's root is read-only: the supervisor adds the
			// agent's user to it, which needs a writable layer that lasts.
			return vm.Spec{}, errors.New("sandbox: another image's root needs a scratch disk for its writable layer")
		}
		spec.Disks = append(spec.Disks, vm.Disk{Path: img.RootFS, ReadOnly: true})
		g.Tools = len(spec.Disks) - 1
	}
	if o.Env != "" {
		if o.ScratchSize <= 0 {
			return vm.Spec{}, errors.New("sandbox: a prepared environment needs a scratch disk for the session's own layer")
		}
		spec.Disks = append(spec.Disks, vm.Disk{Path: o.Env, ReadOnly: true})
		g.Env = len(spec.Disks) - 1
	}
	if o.Share != "" {
		abs, err := filepath.Abs(o.Share)
		if err != nil {
			return vm.Spec{}, fmt.Errorf("share %s: %w", o.Share, err)
		}
		if info.Share() == vm.ShareNone {
			return vm.Spec{}, errors.New("sandbox: this hypervisor mounts no shares: give a workspace disk instead")
		}
		spec.Shares = []vm.Share{{Tag: ShareTag, HostPath: abs, ReadOnly: o.ShareReadOnly}}
		g.Share = info.Share()
	}
	switch {
	case o.Network && o.NIC != nil:
		return vm.Spec{}, errors.New("sandbox: the hypervisor's NAT and a NIC of the caller's are exclusive")
	case o.NIC != nil:
		if o.NICArg == "" {
			return vm.Spec{}, errors.New("sandbox: a NIC needs its sandbar.net argument")
		}
		if !info.Supports(vm.NetworkSocket) {
			return vm.Spec{}, ErrNoSocketNetwork
		}
		spec.Network = vm.NetworkSocket
		spec.NIC = o.NIC
		g.Net = o.NICArg
	case o.Network:
		if !info.Supports(vm.NetworkNAT) {
			return vm.Spec{}, errors.New("sandbox: this hypervisor has no network of its own: use a NIC on Sandbar's network")
		}
		spec.Network = vm.NetworkNAT
		g.Net = info.NATNet
	}
	spec.CommandLine = append(vm.GuestArgs(g), o.KernelArgs...)
	return spec, nil
}

// Sandbox is a booted guest whose supervisor said it is ready.
type Sandbox struct {
	vm.Machine
	Client *Client
	// Ready is the guest's system:ready (kernel, CPUs, memory).
	Ready protocol.Event
	// Booted is how long the hypervisor took to start; ReadyAfter is boot
	// start → system:ready.
	Booted, ReadyAfter time.Duration
	// FromTemplate: the VM started from Options.Template. TemplateNote
	// says how the VM started when a template was asked for: "started
	// from the template", or "booted: " and why not.
	FromTemplate bool
	TemplateNote string
	spec         vm.Spec
	log          *slog.Logger
}

// Spec is what was booted.
func (s *Sandbox) Spec() vm.Spec { return s.spec }

// NetError is why the guest has no network although it was given one
// (system:ready's net_error), as one line of printable text; "" when its
// network is up or it was given none. It is the guest's word, for a
// person to read: shown, never acted on.
func (s *Sandbox) NetError() string {
	return oneLine(s.Ready.NetError)
}

// oneLine makes the guest's text one line of printable text.
func oneLine(s string) string {
	return strings.Join(strings.Fields(stripEscapes(strings.NewReplacer("\n", " ", "\r", " ").Replace(s))), " ")
}

// Boot boots img on hv and waits for system:ready.
func Boot(ctx context.Context, hv vm.Hypervisor, img *image.Image, o Options) (*Sandbox, error) {
	o.defaults()
	spec, err := SpecFor(img, hv.Info(), o)
	if err != nil {
		return nil, err
	}
	if o.Share != "" {
		if fi, err := os.Stat(o.Share); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("share %s is not a directory: give an existing folder", o.Share)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create VM directory: %w", err)
	}
	if o.Root != "" {
		if err := CheckRoot(o.Root); err != nil {
			return nil, err
		}
	}
	if o.ScratchSize > 0 {
		if err := ensureScratch(o.Scratch, o.ScratchSize); err != nil {
			return nil, err
		}
	}
	if o.Template == "" {
		return bootCold(ctx, hv, spec, o)
	}
	sb, why, err := bootFromTemplate(ctx, hv, spec, o)
	if err == nil || ctx.Err() != nil {
		return sb, err
	}
	// A template is only ever a faster start: whatever is wrong with
	// it, the VM boots as it would without one.
	o.Logger.Info("not starting from the template", "vm", o.Name, "why", why, "err", err)
	sb, err = bootCold(ctx, hv, spec, o)
	if sb != nil {
		sb.TemplateNote = "booted: " + why
	}
	return sb, err
}

// bootCold boots spec and waits for system:ready.
func bootCold(ctx context.Context, hv vm.Hypervisor, spec vm.Spec, o Options) (*Sandbox, error) {
	caplog.Remove(spec.ConsoleLog) // this boot's console only
	start := time.Now()
	m, err := hv.Boot(ctx, spec)
	if err != nil {
		return nil, err
	}
	return awaitReady(ctx, m, spec, o, start)
}

// awaitReady waits for the guest's system:ready on m, started at start;
// a VM that never says it is killed, and the error has the console's
// tail.
func awaitReady(ctx context.Context, m vm.Machine, spec vm.Spec, o Options, start time.Time) (*Sandbox, error) {
	sb := &Sandbox{Machine: m, spec: spec, Booted: time.Since(start), log: o.Logger.With("vm", o.Name)}
	sb.Client = NewClient(m.Conn(), ClientOptions{OnEvent: o.OnEvent, Logger: o.Logger})

	exited := make(chan error, 1)
	waitCtx, stopWaiting := context.WithCancel(context.Background())
	defer stopWaiting()
	go func() { exited <- m.Wait(waitCtx) }()

	readyCtx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	readyErr := make(chan error, 1)
	go func() {
		ev, err := sb.Client.Ready(readyCtx)
		sb.Ready = ev
		readyErr <- err
	}()
	var err error
	select {
	case err = <-readyErr:
		if err == nil {
			sb.ReadyAfter = time.Since(start)
			if sb.Ready.Version != protocol.Version {
				sb.Kill()
				m.Wait(context.Background())
				return nil, fmt.Errorf("the guest speaks protocol version %d, this sandbar %d: rebuild the image with `sandbar image build`", sb.Ready.Version, protocol.Version)
			}
			if why := sb.NetError(); why != "" {
				o.Logger.Warn("the guest booted without network", "vm", o.Name, "err", why)
			}
			return sb, nil
		}
	case werr := <-exited:
		err = fmt.Errorf("the VM stopped before the guest was ready: %v", werr)
		if werr == nil {
			err = errors.New("the VM powered off before the guest was ready")
		}
	}
	sb.Kill()
	m.Wait(context.Background())
	sb.Client.Close()
	tail := ConsoleTail(spec.ConsoleLog, 20)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		err = fmt.Errorf("%w: no system:ready after %s (see %s)", vm.ErrBootTimeout, o.ReadyTimeout, spec.ConsoleLog)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	if tail != "" {
		err = fmt.Errorf("%w\nlast console lines:\n%s", err, tail)
	}
	return nil, err
}

// diskSize is the size a disk image of at least n bytes is made: n rounded
// up to whole MiB. Virtualization.framework refuses a disk image whose
// size is not a whole number of 512-byte sectors, and a size given in
// fractional GiB (`sandbar vm run --disk 0.3`) is not one.
func diskSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n + vm.MiB - 1) / vm.MiB * vm.MiB
}

// ensureScratch creates a sparse scratch disk of at least size bytes
// (diskSize), or grows a smaller existing one (the guest's ext4 keeps its
// size; growing only adds room for a later resize), or one of a size the
// framework would refuse. An existing disk keeps its contents.
func ensureScratch(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("scratch disk: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("scratch disk: %w", err)
	}
	size = max(diskSize(size), diskSize(fi.Size()))
	if fi.Size() < size {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("scratch disk: make %s %d bytes: %w", path, size, err)
		}
	}
	return nil
}

// ConsoleTail returns the last n lines of a console log ("" when there is
// none), without carriage returns or terminal escapes.
func ConsoleTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 64<<10 {
		f.Seek(-64<<10, io.SeekEnd)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		l := strings.TrimRight(stripEscapes(sc.Text()), "\r ")
		if l == "" {
			continue
		}
		lines = append(lines, l)
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// stripEscapes removes ANSI CSI sequences and other control bytes.
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			continue
		}
		if c < 0x20 && c != '\t' {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
