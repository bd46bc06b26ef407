package qemu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"sandbar/vm"
)

// plan is everything Boot decided before starting QEMU: pure data, so the
// translation from a Spec is tested without running anything.
type plan struct {
	Binary  string
	Args    []string
	Channel string // unix socket of the virtio-serial port org.sandbar.0; "" for none
	// VsockCID is the guest's vsock CID when the host channel is vsock
	// (ShapeVZ), 0 otherwise.
	VsockCID uint32
	QMP      string // unix socket of the QMP monitor
	// QMPEvents is a second QMP monitor's socket, held open for the life
	// of the VM to hear its events (watchEvents): a monitor serves one
	// client at a time, so commands keep the first one free.
	QMPEvents string
	PIDFile   string
	Virtiofsd []virtiofsdJob
	// NoTHP starts QEMU with transparent huge pages off (see
	// startWithoutTHP): under emulation, not under KVM.
	NoTHP bool
	// ExtraFiles are inherited by QEMU as fds 3, 4, ...: the console's
	// socket (ExtraFiles[ConsoleFile], set at start) and the NIC's socket.
	ExtraFiles []*os.File
	// Console is the console log Sandbar writes from what QEMU sends on
	// its console socket, capped at ConsoleMax bytes; "" means none.
	Console    string
	ConsoleMax int64
	// ConsoleFile is the index in ExtraFiles of the console socket's QEMU
	// end, which start makes (-1 when there is no console).
	ConsoleFile int
	// Incoming is QEMU's descriptor of the state file it loads after
	// start (-incoming defer, then migrate-incoming): a resume; 0 for a
	// boot.
	Incoming int
	// ParentDeath has the kernel kill QEMU and its virtiofsd when this
	// process dies (see procAttr).
	ParentDeath bool
	// IgnoreShared sets the migration capability x-ignore-shared before
	// a save or a load: a template's RAM lives in its file, and only the
	// devices' state goes through the stream.
	IgnoreShared bool
	// FromTemplate: the guest's RAM is a template's file mapped
	// privately; nothing may discard its pages (see settings.MemFile).
	FromTemplate bool
}

// start starts cmd, QEMU run as p says: without transparent huge pages
// when p.NoTHP.
func (p plan) start(cmd *exec.Cmd) error {
	if p.NoTHP {
		return startWithoutTHP(cmd)
	}
	return cmd.Start()
}

// virtiofsdJob is one virtio-fs daemon serving a share.
type virtiofsdJob struct {
	Binary string
	Share  vm.Share
	Socket string
}

// settings are the host facts the translation depends on.
type settings struct {
	Binary    string
	Arch      string // "amd64" or "arm64"
	KVM       bool
	TSCkHz    int    // for tsc_early_khz under emulation; 0 if unknown
	Virtiofsd string // path of virtiofsd; "" means use 9p
	SocketDir string // where sockets go (short: unix socket paths are limited to 107 bytes)
	Shape     string // "" or ShapeVZ
	// VsockCID, with ShapeVZ, gives the guest a vhost-vsock device at
	// that CID for the host channel; 0 gives it none.
	VsockCID uint32
	// ParentDeath: see plan.ParentDeath.
	ParentDeath bool
	// MemFile backs the guest's RAM with a file (a template's): shared
	// (MemShared, the template's own boot, whose RAM is written to it)
	// or mapped privately, copy-on-write (a VM started from it). Such a
	// VM's balloon reports no free pages: QEMU 7.2 discards a page of a
	// file-backed RAM by punching a hole in the file, shared or not,
	// which would zero the template under every other VM mapping it.
	MemFile   string
	MemShared bool
}

// ChannelName is the virtio-serial port the guest supervisor looks for.
const ChannelName = "org.sandbar.0"

// escape makes a path safe inside a QEMU option list, where ',' separates
// options and is written ",,".
func escape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

func buildPlan(spec vm.Spec, st settings) (plan, error) {
	p := plan{
		Binary:  st.Binary,
		Channel: filepath.Join(st.SocketDir, "channel.sock"),
		QMP:     filepath.Join(st.SocketDir, "qmp.sock"),

		QMPEvents: filepath.Join(st.SocketDir, "qmpev.sock"),
		PIDFile:   filepath.Join(spec.Dir, PIDFile),
		NoTHP:     !st.KVM,

		ParentDeath: st.ParentDeath,
	}
	for _, s := range []string{p.Channel, p.QMP, p.QMPEvents} {
		if len(s) > 107 {
			return plan{}, fmt.Errorf("socket path %s is longer than the 107 bytes unix sockets allow", s)
		}
	}
	vz := st.Shape == ShapeVZ
	if st.Shape != "" && !vz {
		return plan{}, fmt.Errorf("machine shape %q is unknown: use \"\" or %q", st.Shape, ShapeVZ)
	}
	a := []string{"-name", "sandbar:" + spec.Name, "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none"}
	machine, console := "microvm,x-option-roms=off,rtc=on", "ttyS0"
	if st.Arch == "arm64" {
		machine, console = "virt,gic-version=max", "ttyAMA0"
	}
	if vz {
		// Virtualization.framework's machine: virtio over PCI, and the
		// console a virtio console, whose driver is a module.
		console = "hvc0"
		if st.Arch == "amd64" {
			machine += ",pcie=on,isa-serial=off"
		}
	}
	machine += ",memory-backend=" + ramID
	if st.KVM {
		a = append(a, "-M", machine, "-accel", "kvm", "-cpu", "host")
	} else {
		cpu := "max"
		if st.Arch == "amd64" {
			// Without ERMS, the guest copies memory with unrolled 8-byte
			// moves rather than "rep movsb", which emulation runs a byte
			// at a time: under TCG that made the guest kernel boot 0.25 s
			// faster and its pipes about twice as fast.
			cpu = "max,-erms"
		}
		a = append(a, "-M", machine, "-accel", "tcg", "-cpu", cpu)
	}
	a = append(a, "-smp", strconv.Itoa(spec.CPUs), "-m", strconv.FormatUint(spec.Memory/vm.MiB, 10)+"M")
	// The guest's RAM is always the backend object ram0, so a saved
	// state names the same RAM block however the VM was started: a
	// session started from a template suspends, and resumes cold.
	mem := fmt.Sprintf("memory-backend-ram,id=%s,size=%dM", ramID, spec.Memory/vm.MiB)
	switch {
	case st.MemFile != "":
		if len(spec.Shares) > 0 && st.Virtiofsd != "" {
			return plan{}, errors.New("a VM with a virtio-fs share cannot use a template's RAM")
		}
		share := "off"
		if st.MemShared {
			share = "on"
		}
		mem = fmt.Sprintf("memory-backend-file,id=%s,size=%dM,mem-path=%s,share=%s", ramID, spec.Memory/vm.MiB, escape(st.MemFile), share)
		p.FromTemplate = !st.MemShared
	case st.Virtiofsd != "" && len(spec.Shares) > 0:
		// virtio-fs needs the guest RAM shareable with the daemon.
		mem = fmt.Sprintf("memory-backend-memfd,id=%s,size=%dM,share=on", ramID, spec.Memory/vm.MiB)
	}
	a = append(a, "-object", mem)
	a = append(a, "-kernel", spec.Kernel, "-initrd", spec.Initramfs)

	// cryptomgr.notests: the kernel's boot-time self-tests of its crypto
	// algorithms took 0.7 s of a 2.8 s boot under emulation (Debian's
	// 6.1.0-50, QEMU TCG); they guard against broken accelerated
	// implementations, which a virtual CPU does not have.
	cmdline := append([]string{"console=" + console, "cryptomgr.notests"}, spec.CommandLine...)
	if !st.KVM {
		// An emulated CPU does not speculate, so the guest kernel's
		// Spectre mitigations (retpolines, RSB filling) only cost time:
		// about 0.1 s of its boot under TCG.
		cmdline = append(cmdline, "mitigations=off")
	}
	if !st.KVM && st.TSCkHz > 0 && st.Arch == "amd64" {
		// Under emulation the guest's TSC calibration never settles without it.
		cmdline = append(cmdline, "tsc_early_khz="+strconv.Itoa(st.TSCkHz))
	}
	a = append(a, "-append", strings.Join(cmdline, " "))

	p.ConsoleFile = -1
	if spec.ConsoleLog != "" {
		// QEMU writes the console to a socket whose other end Sandbar
		// reads and writes, capped, to the log (startConsole): with
		// QEMU's file backend the guest could fill the host's disk.
		p.Console, p.ConsoleMax = spec.ConsoleLog, spec.ConsoleMax
		if p.ConsoleMax <= 0 {
			p.ConsoleMax = vm.DefaultConsoleMax
		}
		p.ConsoleFile = len(p.ExtraFiles)
		p.ExtraFiles = append(p.ExtraFiles, nil)
		a = append(a, "-chardev", "socket,id=console,fd="+strconv.Itoa(3+p.ConsoleFile))
		if vz {
			// One port: the device then offers no multiport, as vz's
			// console device does not, and hvc0 appears at its probe.
			a = append(a, "-device", "virtio-serial-pci,max_ports=1", "-device", "virtconsole,chardev=console")
		} else {
			a = append(a, "-serial", "chardev:console")
		}
	}
	dev := func(kind string) string {
		if st.Arch == "arm64" || vz {
			return "virtio-" + kind + "-pci"
		}
		return "virtio-" + kind + "-device"
	}
	for i, d := range spec.Disks {
		id := vm.DiskName(i)
		opt := fmt.Sprintf("id=%s,file=%s,format=raw,if=none,cache=writeback,discard=unmap", id, escape(d.Path))
		if d.ReadOnly {
			opt += ",readonly=on"
		} else {
			// A write that finds the host's disk full pauses the VM
			// (QMP BLOCK_IO_ERROR with nospace, then STOP) until Sandbar
			// sees room again and continues it (vm.DiskPauser); any other
			// error reaches the guest as its disk's error.
			opt += ",werror=enospc,rerror=report"
		}
		a = append(a, "-drive", opt, "-device", dev("blk")+",drive="+id)
	}
	for i, sh := range spec.Shares {
		id := fmt.Sprintf("fs%d", i)
		if st.Virtiofsd != "" {
			sock := filepath.Join(st.SocketDir, id+".sock")
			p.Virtiofsd = append(p.Virtiofsd, virtiofsdJob{Binary: st.Virtiofsd, Share: sh, Socket: sock})
			fsDev := "vhost-user-fs-device"
			if vz {
				fsDev = "vhost-user-fs-pci"
			}
			a = append(a, "-chardev", "socket,id="+id+",path="+escape(sock), "-device", fsDev+",chardev="+id+",tag="+sh.Tag)
			continue
		}
		opt := fmt.Sprintf("local,id=%s,path=%s,security_model=none", id, escape(sh.HostPath))
		if sh.ReadOnly {
			opt += ",readonly=on"
		}
		a = append(a, "-fsdev", opt, "-device", dev("9p")+",fsdev="+id+",mount_tag="+sh.Tag)
	}
	switch spec.Network {
	case vm.NetworkNAT:
		a = append(a, "-netdev", "user,id=net0", "-device", dev("net")+",netdev=net0")
	case vm.NetworkSocket:
		if spec.NIC == nil || spec.NIC.File == nil {
			return plan{}, fmt.Errorf("network %q needs a NIC socket", vm.NetworkSocket)
		}
		// The socket pair's end is QEMU's fd 3+i; a stream socket carries
		// length-prefixed frames. host_mtu tells the guest driver the
		// link's MTU (VIRTIO_NET_F_MTU).
		fd := 3 + len(p.ExtraFiles)
		p.ExtraFiles = append(p.ExtraFiles, spec.NIC.File)
		a = append(a, "-netdev", "socket,id=net0,fd="+strconv.Itoa(fd),
			"-device", fmt.Sprintf("%s,netdev=net0,mac=%s,host_mtu=%d", dev("net"), spec.NIC.MAC, spec.NIC.MTU))
	}
	if vz {
		// vz's entropy and balloon devices; the host channel is vsock.
		a = append(a, "-device", dev("rng"), "-device", dev("balloon"))
		p.Channel = ""
		if st.VsockCID != 0 {
			p.VsockCID = st.VsockCID
			a = append(a, "-device", fmt.Sprintf("vhost-vsock-pci,guest-cid=%d", st.VsockCID))
		}
	} else {
		a = append(a,
			// The guest's balloon driver reports the pages it frees (in
			// 2 MiB blocks, two seconds after they are freed) and QEMU
			// drops them from its memory: a guest that freed 1 GiB gives
			// the host 1 GiB back, with no one driving the balloon.
			"-device", dev("balloon")+",free-page-reporting="+onOff(st.MemFile == ""),
			// Two ports, not the default 31: the guest driver sets up two
			// virtqueues per port at probe, which took 30 ms of its 100 ms
			// under emulation; port 0 is reserved for a console, the
			// channel is port 1.
			"-device", dev("serial")+",max_ports=2",
			"-chardev", "socket,id=channel,path="+escape(p.Channel)+",server=on,wait=off",
			"-device", "virtserialport,chardev=channel,name="+ChannelName,
		)
	}
	a = append(a,
		// -chardev + -mon, not -qmp unix:PATH: the shorthand misreads a
		// path holding "=" as an option.
		"-chardev", "socket,id=qmp,path="+escape(p.QMP)+",server=on,wait=off",
		"-mon", "chardev=qmp,mode=control",
		"-chardev", "socket,id=qmpev,path="+escape(p.QMPEvents)+",server=on,wait=off",
		"-mon", "chardev=qmpev,mode=control",
	)
	p.Args = a
	return p, nil
}

// ramID names the guest RAM's backend object (see buildPlan).
const ramID = "ram0"

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// GuestNet is the kernel argument that configures the guest NIC for QEMU's
// user-mode network: its fixed addresses need no DHCP round trip.
const GuestNet = "static:10.0.2.15/24,10.0.2.2,10.0.2.3"
