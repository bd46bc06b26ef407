//go:build darwin

package vz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"

	vzapi "github.com/Code-Hex/vz/v3"
	"golang.org/x/sys/unix"

	"sandbar/vm"
)

// Hypervisor is the Virtualization.framework backend.
//
// Threading: vz v3 gives every VirtualMachine its own dispatch queue and
// runs each framework call on it (dispatch_sync for queries, completion
// handlers for Start/Stop/Connect), so the methods here may be called from
// any goroutine. Only a graphical console would need the main thread, and
// Sandbar's guests have none.
type Hypervisor struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	status *vm.Status
}

// New returns the backend; nothing runs until Check or Boot.
func New(cfg Config) *Hypervisor {
	cfg = cfg.withDefaults()
	return &Hypervisor{cfg: cfg, log: cfg.Logger}
}

// Name implements vm.Hypervisor.
func (h *Hypervisor) Name() string { return "vz" }

// Check says whether this Mac and this binary can run VMs; a positive
// verdict is kept for the life of the process.
func (h *Hypervisor) Check(ctx context.Context) vm.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != nil {
		return *h.status
	}
	st := check(ctx)
	if st.Available {
		h.status = &st
	}
	return st
}

func check(ctx context.Context) vm.Status {
	ver, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		return vm.Status{Detail: "cannot read the macOS version: " + err.Error()}
	}
	if why := versionProblem(ver); why != "" {
		return vm.Status{Detail: why}
	}
	if hv, err := unix.SysctlUint32("kern.hv_support"); err != nil || hv != 1 {
		return vm.Status{Detail: "this Mac has no hardware virtualization (kern.hv_support is not 1), as inside another VM: run Sandbar on the Mac itself, or use the qemu backend"}
	}
	if ok, why := checkEntitlement(ctx); !ok {
		return vm.Status{Detail: why}
	}
	return vm.Status{Available: true, Accelerated: true, Detail: fmt.Sprintf("Virtualization.framework on macOS %s (%s)", ver, runtime.GOARCH)}
}

// checkEntitlement asks codesign what the running binary is signed with:
// without the entitlement the framework refuses every VM, and its error
// then does not say why.
func checkEntitlement(ctx context.Context) (bool, string) {
	exe, err := os.Executable()
	if err != nil {
		return false, "cannot find the running executable to check its signature: " + err.Error()
	}
	codesign, err := exec.LookPath("codesign")
	if err != nil {
		// Without codesign nothing can be checked; let Boot's own error speak.
		return true, ""
	}
	out, err := exec.CommandContext(ctx, codesign, "-d", "--entitlements", "-", "--xml", exe).Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return true, ""
	}
	if err != nil || !entitled(out, EntitlementKey) {
		return false, fmt.Sprintf("%s is not signed with the %s entitlement: %s", exe, EntitlementKey, signHint)
	}
	return true, ""
}

// frameworkLimits are this Mac's bounds on a VM's CPUs and memory.
func frameworkLimits() Limits {
	return Limits{
		MinCPUs:   vzapi.VirtualMachineConfigurationMinimumAllowedCPUCount(),
		MaxCPUs:   vzapi.VirtualMachineConfigurationMaximumAllowedCPUCount(),
		MinMemory: vzapi.VirtualMachineConfigurationMinimumAllowedMemorySize(),
		MaxMemory: vzapi.VirtualMachineConfigurationMaximumAllowedMemorySize(),
	}
}

func hostMemory() uint64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return n
}

// Boot starts a VM for spec and connects to the guest supervisor over
// vsock. It returns once the supervisor accepted the connection; the caller
// waits for system:ready on Conn.
func (h *Hypervisor) Boot(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	st := h.Check(ctx)
	if !st.Available {
		return nil, fmt.Errorf("%s: %w", st.Detail, vm.ErrUnavailable)
	}
	if err := spec.Validate(vm.Host{CPUs: runtime.NumCPU(), Memory: hostMemory()}); err != nil {
		return nil, err
	}
	files := []string{spec.Kernel, spec.Initramfs}
	for _, d := range spec.Disks {
		files = append(files, d.Path)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("guest image file %s is missing: run `sandbar image build`: %w", f, vm.ErrNotFound)
		}
	}
	var problems []string
	for i, d := range spec.Disks {
		if fi, err := os.Stat(d.Path); err == nil {
			if why := diskSizeProblem(i, d.Path, fi.Size()); why != "" {
				problems = append(problems, why)
			}
		}
	}
	if len(problems) > 0 {
		return nil, &vm.SpecError{Problems: problems}
	}
	for _, sh := range spec.Shares {
		if fi, err := os.Stat(sh.HostPath); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("shared directory %s is missing: recreate the session's workspace: %w", sh.HostPath, vm.ErrNotFound)
		}
	}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create VM directory: %w", err)
	}
	p, err := buildPlan(spec, frameworkLimits())
	if err != nil {
		return nil, err
	}
	log := h.log.With("vm", spec.Name)
	for _, note := range p.Adjusted {
		log.Info("spec adjusted to the framework's limits", "change", note)
	}
	cons, err := openConsole(p, log)
	if err != nil {
		return nil, err
	}
	cfg, err := configure(p, cons)
	if err != nil {
		cons.stop()
		return nil, err
	}
	m, err := start(ctx, cfg, p, cons, h.cfg.ConnectTimeout, log)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// configure is the only place a Plan becomes framework objects; cons is
// the console's pipe (nil when the plan has no console).
func configure(p Plan, cons *console) (*vzapi.VirtualMachineConfiguration, error) {
	boot, err := vzapi.NewLinuxBootLoader(p.Kernel, vzapi.WithCommandLine(p.CommandLine), vzapi.WithInitrd(p.Initrd))
	if err != nil {
		return nil, fmt.Errorf("boot loader for kernel %s: %w", p.Kernel, err)
	}
	cfg, err := vzapi.NewVirtualMachineConfiguration(boot, p.CPUs, p.Memory)
	if err != nil {
		return nil, fmt.Errorf("VM configuration: %w", err)
	}

	var disks []vzapi.StorageDeviceConfiguration
	for i, d := range p.Disks {
		att, err := vzapi.NewDiskImageStorageDeviceAttachmentWithCacheAndSync(d.Path, d.ReadOnly, cachingMode(d.Caching), syncMode(d.Sync))
		if err != nil {
			return nil, fmt.Errorf("disk %s (%s): %w", vm.DiskName(i), d.Path, err)
		}
		blk, err := vzapi.NewVirtioBlockDeviceConfiguration(att)
		if err != nil {
			return nil, fmt.Errorf("disk %s (%s): %w", vm.DiskName(i), d.Path, err)
		}
		disks = append(disks, blk)
	}
	cfg.SetStorageDevicesVirtualMachineConfiguration(disks)

	var shares []vzapi.DirectorySharingDeviceConfiguration
	for _, sh := range p.Shares {
		dir, err := vzapi.NewSharedDirectory(sh.Path, sh.ReadOnly)
		if err != nil {
			return nil, fmt.Errorf("share %s (%s): %w", sh.Tag, sh.Path, err)
		}
		single, err := vzapi.NewSingleDirectoryShare(dir)
		if err != nil {
			return nil, fmt.Errorf("share %s: %w", sh.Tag, err)
		}
		fs, err := vzapi.NewVirtioFileSystemDeviceConfiguration(sh.Tag)
		if err != nil {
			return nil, fmt.Errorf("share tag %q: %w", sh.Tag, err)
		}
		fs.SetDirectoryShare(single)
		shares = append(shares, fs)
	}
	cfg.SetDirectorySharingDevicesVirtualMachineConfiguration(shares)

	sock, err := vzapi.NewVirtioSocketDeviceConfiguration()
	if err != nil {
		return nil, fmt.Errorf("vsock device: %w", err)
	}
	cfg.SetSocketDevicesVirtualMachineConfiguration([]vzapi.SocketDeviceConfiguration{sock})

	if p.NAT {
		nat, err := vzapi.NewNATNetworkDeviceAttachment()
		if err != nil {
			return nil, fmt.Errorf("NAT network: %w", err)
		}
		nic, err := vzapi.NewVirtioNetworkDeviceConfiguration(nat)
		if err != nil {
			return nil, fmt.Errorf("network device: %w", err)
		}
		mac, err := vzapi.NewRandomLocallyAdministeredMACAddress()
		if err != nil {
			return nil, fmt.Errorf("MAC address: %w", err)
		}
		nic.SetMACAddress(mac)
		cfg.SetNetworkDevicesVirtualMachineConfiguration([]*vzapi.VirtioNetworkDeviceConfiguration{nic})
	}

	if p.NIC != nil {
		nic, err := socketNIC(*p.NIC)
		if err != nil {
			return nil, err
		}
		cfg.SetNetworkDevicesVirtualMachineConfiguration([]*vzapi.VirtioNetworkDeviceConfiguration{nic})
	}

	if cons != nil {
		// Not a file attachment: the framework would write the file
		// itself, as fast and as far as the guest writes its console.
		att, err := vzapi.NewFileHandleSerialPortAttachment(cons.in, cons.w)
		if err != nil {
			return nil, fmt.Errorf("console log %s: %w", p.ConsoleLog, err)
		}
		console, err := vzapi.NewVirtioConsoleDeviceSerialPortConfiguration(att)
		if err != nil {
			return nil, fmt.Errorf("console device: %w", err)
		}
		cfg.SetSerialPortsVirtualMachineConfiguration([]*vzapi.VirtioConsoleDeviceSerialPortConfiguration{console})
	}

	if p.Entropy {
		rng, err := vzapi.NewVirtioEntropyDeviceConfiguration()
		if err != nil {
			return nil, fmt.Errorf("entropy device: %w", err)
		}
		cfg.SetEntropyDevicesVirtualMachineConfiguration([]*vzapi.VirtioEntropyDeviceConfiguration{rng})
	}
	if p.Balloon {
		balloon, err := vzapi.NewVirtioTraditionalMemoryBalloonDeviceConfiguration()
		if err != nil {
			return nil, fmt.Errorf("memory balloon: %w", err)
		}
		cfg.SetMemoryBalloonDevicesVirtualMachineConfiguration([]vzapi.MemoryBalloonDeviceConfiguration{balloon})
	}

	if ok, err := cfg.Validate(); !ok || err != nil {
		if err == nil {
			err = errors.New("the framework gave no reason")
		}
		// The framework says a missing entitlement only in its description;
		// Check normally catches it first, by asking codesign.
		if strings.Contains(err.Error(), EntitlementKey) {
			return nil, fmt.Errorf("VM configuration refused: %s: %w", signHint, errors.Join(vm.ErrUnavailable, err))
		}
		return nil, fmt.Errorf("VM configuration refused by Virtualization.framework: %w", errors.Join(vm.ErrInvalidSpec, err))
	}
	return cfg, nil
}

// socketNIC is a virtio-net device whose frames go through a datagram
// socket to Sandbar's network (app/net/netstack), with the session's
// stable MAC address. The framework reads the socket through an
// NSFileHandle that does not own the descriptor: the file stays open
// until the VM has stopped (the caller closes it).
func socketNIC(n NIC) (*vzapi.VirtioNetworkDeviceConfiguration, error) {
	att, err := vzapi.NewFileHandleNetworkDeviceAttachment(n.File)
	if err != nil {
		return nil, fmt.Errorf("network socket: %w", err)
	}
	if n.MTU != MinMTU {
		if err := att.SetMaximumTransmissionUnit(n.MTU); err != nil {
			return nil, fmt.Errorf("network MTU %d (needs macOS 13): %w", n.MTU, err)
		}
	}
	nic, err := vzapi.NewVirtioNetworkDeviceConfiguration(att)
	if err != nil {
		return nil, fmt.Errorf("network device: %w", err)
	}
	hw, err := net.ParseMAC(n.MAC)
	if err != nil {
		return nil, fmt.Errorf("MAC address %s: %w", n.MAC, err)
	}
	mac, err := vzapi.NewMACAddress(hw)
	if err != nil {
		return nil, fmt.Errorf("MAC address %s: %w", n.MAC, err)
	}
	nic.SetMACAddress(mac)
	return nic, nil
}

func cachingMode(s string) vzapi.DiskImageCachingMode {
	switch s {
	case CachingCached:
		return vzapi.DiskImageCachingModeCached
	default:
		return vzapi.DiskImageCachingModeAutomatic
	}
}

func syncMode(s string) vzapi.DiskImageSynchronizationMode {
	switch s {
	case SyncFull:
		return vzapi.DiskImageSynchronizationModeFull
	default:
		return vzapi.DiskImageSynchronizationModeFsync
	}
}
