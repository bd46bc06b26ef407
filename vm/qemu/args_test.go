package qemu

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"sandbar/vm"
)

func testSpec() vm.Spec {
	return vm.Spec{
		Name: "s1", Kernel: "/img/kernel", Initramfs: "/img/initramfs",
		CommandLine: []string{"panic=-1", "sandbar.root=/dev/vda"},
		Disks:       []vm.Disk{{Path: "/img/root,fs.ext4", ReadOnly: true}, {Path: "/s/scratch.img"}},
		Shares:      []vm.Share{{Tag: "workspace", HostPath: "/home/ann/my répo"}, {Tag: "ro", HostPath: "/data", ReadOnly: true}},
		CPUs:        2, Memory: 2048 * vm.MiB, Network: vm.NetworkNAT,
		ConsoleLog: "/s/console.log", Dir: "/s",
	}
}

// argAfter returns the value following flag's n-th occurrence.
func argsOf(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestPlanEmulation(t *testing.T) {
	p, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: "amd64", TSCkHz: 2445426, SocketDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	a := p.Args
	for _, want := range []string{"-nodefaults", "-no-user-config", "-no-reboot"} {
		if !slices.Contains(a, want) {
			t.Errorf("missing %s", want)
		}
	}
	if got := argsOf(a, "-accel"); !slices.Equal(got, []string{"tcg"}) {
		t.Errorf("accel = %v", got)
	}
	if got := argsOf(a, "-cpu"); !slices.Equal(got, []string{"max,-erms"}) {
		t.Errorf("cpu = %v", got)
	}
	if got := argsOf(a, "-M")[0]; !strings.HasPrefix(got, "microvm") {
		t.Errorf("machine = %s", got)
	}
	app := argsOf(a, "-append")[0]
	for _, want := range []string{"console=ttyS0", "cryptomgr.notests", "mitigations=off", "tsc_early_khz=2445426", "sandbar.root=/dev/vda", "panic=-1"} {
		if !strings.Contains(app, want) {
			t.Errorf("-append %q lacks %s", app, want)
		}
	}
	drives := argsOf(a, "-drive")
	if len(drives) != 2 || !strings.Contains(drives[0], "file=/img/root,,fs.ext4") || !strings.Contains(drives[0], "readonly=on") || strings.Contains(drives[1], "readonly") {
		t.Errorf("drives = %v", drives)
	}
	// A full host disk pauses the VM (vm.DiskPauser) on a writable disk:
	// the guest never takes ENOSPC on its scratch disk for a broken disk.
	if len(drives) == 2 && (strings.Contains(drives[0], "werror") || !strings.Contains(drives[1], ",werror=enospc,rerror=report")) {
		t.Errorf("drives = %v: want werror=enospc on the writable disk only", drives)
	}
	fsdev := argsOf(a, "-fsdev")
	if len(fsdev) != 2 || !strings.Contains(fsdev[0], "path=/home/ann/my répo") || strings.Contains(fsdev[0], "readonly") || !strings.Contains(fsdev[1], "readonly=on") {
		t.Errorf("fsdev = %v", fsdev)
	}
	if slices.Contains(a, "-virtfs") {
		t.Error("-virtfs does not work on microvm")
	}
	devs := strings.Join(argsOf(a, "-device"), " ")
	for _, want := range []string{"virtio-9p-device,fsdev=fs0,mount_tag=workspace", "virtio-net-device", "virtio-serial-device,max_ports=2", "virtserialport,chardev=channel,name=org.sandbar.0", "virtio-blk-device,drive=vda",
		// Memory the guest frees goes back to the host (issue 24).
		"virtio-balloon-device,free-page-reporting=on"} {
		if !strings.Contains(devs, want) {
			t.Errorf("devices %q lack %q", devs, want)
		}
	}
	if got := argsOf(a, "-m")[0]; got != "2048M" {
		t.Errorf("-m %s", got)
	}
	if p.Channel != "/s/channel.sock" || p.QMP != "/s/qmp.sock" || p.PIDFile != "/s/vm.pid" {
		t.Errorf("paths %+v", p)
	}
}

func TestPlanKVMNoNetworkVirtiofs(t *testing.T) {
	s := testSpec()
	s.Network = vm.NetworkOff
	p, err := buildPlan(s, settings{Binary: "qemu", Arch: "amd64", KVM: true, TSCkHz: 1000, Virtiofsd: "/usr/libexec/virtiofsd", SocketDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	a := strings.Join(p.Args, " ")
	if !strings.Contains(a, "-accel kvm -cpu host ") || strings.Contains(a, "tsc_early_khz") || strings.Contains(a, "mitigations=off") {
		t.Errorf("kvm args wrong: %s", a)
	}
	if strings.Contains(a, "-netdev") || strings.Contains(a, "virtio-net") {
		t.Errorf("network off still has a NIC: %s", a)
	}
	if !strings.Contains(a, "memory-backend-memfd") || !strings.Contains(a, "vhost-user-fs-device,chardev=fs0,tag=workspace") {
		t.Errorf("virtio-fs args missing: %s", a)
	}
	if len(p.Virtiofsd) != 2 || p.Virtiofsd[1].Share.Tag != "ro" {
		t.Errorf("virtiofsd jobs %+v", p.Virtiofsd)
	}
}

func TestPlanSocketTooLong(t *testing.T) {
	_, err := buildPlan(testSpec(), settings{Arch: "amd64", SocketDir: "/" + strings.Repeat("x", 120)})
	if err == nil {
		t.Fatal("want an error for an over-long socket path")
	}
}

func TestPlanSocketPathsWithOptionCharacters(t *testing.T) {
	dir := "/tmp/vcpus=2,x"
	s := vm.Spec{Name: "t", Kernel: "/k", Initramfs: "/i", CPUs: 1, Memory: 512 * vm.MiB, Network: vm.NetworkOff, Dir: dir, ConsoleLog: dir + "/console.log"}
	p, err := buildPlan(s, settings{Binary: "qemu", Arch: "amd64", SocketDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(p.Args, " ")
	for _, want := range []string{
		"socket,id=qmp,path=/tmp/vcpus=2,,x/qmp.sock,server=on,wait=off",
		"-mon chardev=qmp,mode=control",
		"socket,id=qmpev,path=/tmp/vcpus=2,,x/qmpev.sock,server=on,wait=off",
		"-mon chardev=qmpev,mode=control",
		"socket,id=channel,path=/tmp/vcpus=2,,x/channel.sock,server=on",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q:\n%s", want, args)
		}
	}
	if strings.Contains(args, "-qmp") {
		t.Errorf("-qmp shorthand misreads paths with '=': %s", args)
	}
}

func TestPlanEmulationArm64(t *testing.T) {
	p, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: "arm64", SocketDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	// erms is an x86 feature: QEMU refuses it for an Arm CPU.
	if got := argsOf(p.Args, "-cpu"); !slices.Equal(got, []string{"max"}) {
		t.Errorf("cpu = %v", got)
	}
	devs := strings.Join(argsOf(p.Args, "-device"), " ")
	for _, want := range []string{"virtio-serial-pci,max_ports=2", "virtio-balloon-pci,free-page-reporting=on"} {
		if !strings.Contains(devs, want) {
			t.Errorf("devices %q lack %s", devs, want)
		}
	}
	if app := argsOf(p.Args, "-append")[0]; !strings.Contains(app, "console=ttyAMA0") || !strings.Contains(app, "mitigations=off") {
		t.Errorf("-append %q", app)
	}
}

func TestPlanNoTHP(t *testing.T) {
	for _, kvm := range []bool{false, true} {
		p, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: "amd64", SocketDir: "/s", KVM: kvm})
		if err != nil {
			t.Fatal(err)
		}
		if p.NoTHP == kvm {
			t.Errorf("KVM %v: NoTHP %v, want %v", kvm, p.NoTHP, !kvm)
		}
	}
}

// TestPlanSocketNetwork: Sandbar's own network reaches QEMU as an
// inherited socket (fd 3) carrying length-prefixed frames, with the
// session's MAC and the link's MTU; no user-mode network, which would
// reach the host's loopback.
func TestPlanSocketNetwork(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "nic")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := testSpec()
	s.Network = vm.NetworkSocket
	s.NIC = &vm.NIC{File: f, MAC: net.HardwareAddr{0x5a, 0x94, 0xef, 1, 2, 3}, MTU: 65520}
	p, err := buildPlan(s, settings{Binary: "qemu", Arch: "amd64", SocketDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	// fd 3 is the console's socket, which start makes.
	if got := argsOf(p.Args, "-chardev"); len(got) == 0 || got[0] != "socket,id=console,fd=3" || p.ConsoleFile != 0 || p.Console != s.ConsoleLog || p.ConsoleMax != vm.DefaultConsoleMax {
		t.Errorf("-chardev %v, console file %d, log %q capped at %d: want the console's socket on fd 3, written to %s capped at %d",
			got, p.ConsoleFile, p.Console, p.ConsoleMax, s.ConsoleLog, vm.DefaultConsoleMax)
	}
	if got := argsOf(p.Args, "-netdev"); !slices.Equal(got, []string{"socket,id=net0,fd=4"}) {
		t.Errorf("-netdev %v, want the socket on fd 4", got)
	}
	if !slices.Contains(argsOf(p.Args, "-device"), "virtio-net-device,netdev=net0,mac=5a:94:ef:01:02:03,host_mtu=65520") {
		t.Errorf("no NIC device with the MAC and MTU in %v", argsOf(p.Args, "-device"))
	}
	if len(p.ExtraFiles) != 2 || p.ExtraFiles[1] != f {
		t.Errorf("extra files %v, want the NIC's socket", p.ExtraFiles)
	}
	if strings.Contains(strings.Join(p.Args, " "), "user,") {
		t.Error("the plan has a user-mode network")
	}
}

// TestPlanVZShape: the machine shaped like Virtualization.framework's has
// only virtio-PCI devices, a virtio console as hvc0 and no UART, no
// org.sandbar.0 port, vsock where the host has it, and vz's entropy and
// balloon devices.
func TestPlanVZShape(t *testing.T) {
	for _, tt := range []struct {
		arch    string
		cid     uint32
		machine string
	}{
		{"amd64", 70000, "microvm,x-option-roms=off,rtc=on,pcie=on,isa-serial=off,memory-backend=ram0"},
		{"amd64", 0, "microvm,x-option-roms=off,rtc=on,pcie=on,isa-serial=off,memory-backend=ram0"},
		{"arm64", 70001, "virt,gic-version=max,memory-backend=ram0"},
	} {
		t.Run(fmt.Sprintf("%s cid %d", tt.arch, tt.cid), func(t *testing.T) {
			p, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: tt.arch, SocketDir: "/s", Shape: ShapeVZ, VsockCID: tt.cid})
			if err != nil {
				t.Fatal(err)
			}
			a := p.Args
			if got := argsOf(a, "-M"); !slices.Equal(got, []string{tt.machine}) {
				t.Errorf("machine = %v, want %s", got, tt.machine)
			}
			if app := argsOf(a, "-append")[0]; !strings.HasPrefix(app, "console=hvc0 ") || strings.Contains(app, "ttyS0") || strings.Contains(app, "ttyAMA0") {
				t.Errorf("-append %q: want console=hvc0 and no UART console", app)
			}
			if slices.Contains(a, "-serial") {
				t.Error("a UART console on the vz shape")
			}
			devs := argsOf(a, "-device")
			for _, d := range devs {
				name, _, _ := strings.Cut(d, ",")
				if strings.HasSuffix(name, "-device") {
					t.Errorf("device %s is not on PCI", d)
				}
			}
			joined := strings.Join(devs, " ")
			for _, want := range []string{"virtio-serial-pci,max_ports=1", "virtconsole,chardev=console", "virtio-blk-pci,drive=vda",
				"virtio-net-pci,netdev=net0", "virtio-9p-pci,fsdev=fs0", "virtio-rng-pci", "virtio-balloon-pci"} {
				if !strings.Contains(joined, want) {
					t.Errorf("devices %q lack %q", joined, want)
				}
			}
			if strings.Contains(joined, "free-page-reporting") {
				t.Errorf("the vz shape's balloon reports free pages, which vz's does not: %q", joined)
			}
			if strings.Contains(joined, "virtserialport") || strings.Contains(strings.Join(a, " "), ChannelName) || p.Channel != "" {
				t.Errorf("the vz shape has the org.sandbar.0 port (channel %q): %q", p.Channel, joined)
			}
			vsock := fmt.Sprintf("vhost-vsock-pci,guest-cid=%d", tt.cid)
			if has := slices.Contains(devs, vsock); has != (tt.cid != 0) || p.VsockCID != tt.cid {
				t.Errorf("vsock CID %d: plan's %d, devices %q", tt.cid, p.VsockCID, joined)
			}
		})
	}
	if _, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: "amd64", SocketDir: "/s", Shape: "hyperv"}); err == nil || !strings.Contains(err.Error(), "hyperv") {
		t.Errorf("unknown shape: err = %v", err)
	}
}

func TestShapeVZGuest(t *testing.T) {
	plain, vz := New(Config{}).Info(), New(Config{Shape: ShapeVZ}).Info()
	if plain.Channel != vm.ChannelSerial || plain.NATNet != GuestNet {
		t.Errorf("QEMU's own machine: channel %s, net %s", plain.Channel, plain.NATNet)
	}
	if !plain.Features.FreePageReporting || vz.Features.FreePageReporting {
		t.Errorf("free page reporting: QEMU's own machine %v, the vz shape %v; want true, false", plain.Features.FreePageReporting, vz.Features.FreePageReporting)
	}
	if vz.Channel != vm.ChannelVsock || vz.NATNet != "dhcp" {
		t.Errorf("the vz shape: channel %s, net %s", vz.Channel, vz.NATNet)
	}
}
