package vz

import (
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sandbar/vm"
)

func testSpec() vm.Spec {
	return vm.Spec{
		Name: "s1", Kernel: "/img/Image", Initramfs: "/img/initramfs",
		CommandLine: vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: 2, Workspace: -1, Share: ShareKind, Net: GuestNet}),
		Disks: []vm.Disk{
			{Path: "/img/rootfs.ext4", ReadOnly: true},
			{Path: "/img/agent.ext4", ReadOnly: true},
			{Path: "/s/scratch.img"},
		},
		Shares: []vm.Share{{Tag: "workspace", HostPath: "/Users/ann/my répo"}},
		CPUs:   2, Memory: 2048 * vm.MiB, Network: vm.NetworkNAT,
		ConsoleLog: "/s/console.log", Dir: "/s",
	}
}

// macLimits are what an Apple silicon Mac reports.
var macLimits = Limits{MinCPUs: 1, MaxCPUs: 8, MinMemory: 4 * vm.MiB, MaxMemory: 16384 * vm.MiB}

func TestPlanTranslatesSpec(t *testing.T) {
	p, err := buildPlan(testSpec(), macLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kernel != "/img/Image" || p.Initrd != "/img/initramfs" {
		t.Errorf("boot files %q %q", p.Kernel, p.Initrd)
	}
	wantCmd := "console=hvc0 panic=-1 quiet loglevel=3 sandbar.root=/dev/vda sandbar.agent=/dev/vdb sandbar.scratch=/dev/vdc sandbar.share=virtiofs sandbar.net=dhcp"
	if p.CommandLine != wantCmd {
		t.Errorf("command line\n got %q\nwant %q", p.CommandLine, wantCmd)
	}
	if strings.Contains(p.CommandLine, "tsc") {
		t.Errorf("command line has a TSC flag: %q", p.CommandLine)
	}
	wantDisks := []Disk{
		{Path: "/img/rootfs.ext4", ReadOnly: true, Caching: CachingCached, Sync: SyncFull},
		{Path: "/img/agent.ext4", ReadOnly: true, Caching: CachingCached, Sync: SyncFull},
		{Path: "/s/scratch.img", Caching: CachingCached, Sync: SyncFull},
	}
	if !slices.Equal(p.Disks, wantDisks) {
		t.Errorf("disks (order fixes vda, vdb, vdc)\n got %+v\nwant %+v", p.Disks, wantDisks)
	}
	if want := []Share{{Tag: "workspace", Path: "/Users/ann/my répo"}}; !slices.Equal(p.Shares, want) {
		t.Errorf("shares %+v, want %+v", p.Shares, want)
	}
	if p.VsockPort != 1024 || !p.NAT || p.ConsoleLog != "/s/console.log" || !p.Entropy || !p.Balloon {
		t.Errorf("devices: vsock %d nat %v console %q entropy %v balloon %v", p.VsockPort, p.NAT, p.ConsoleLog, p.Entropy, p.Balloon)
	}
	if p.CPUs != 2 || p.Memory != 2048*vm.MiB || len(p.Adjusted) != 0 {
		t.Errorf("cpus %d memory %d adjusted %v", p.CPUs, p.Memory, p.Adjusted)
	}
}

func TestPlanClamps(t *testing.T) {
	tests := []struct {
		name    string
		cpus    int
		memory  uint64
		limits  Limits
		wantCPU uint
		wantMem uint64
		note    string // substring of an Adjusted note; "" = none expected
	}{
		{"within", 4, 1024 * vm.MiB, macLimits, 4, 1024 * vm.MiB, ""},
		{"too many cpus", 12, 1024 * vm.MiB, macLimits, 8, 1024 * vm.MiB, "lowered to the framework's maximum 8"},
		{"zero cpus", 0, 1024 * vm.MiB, macLimits, 1, 1024 * vm.MiB, "raised to 1"},
		{"below min cpus", 1, 1024 * vm.MiB, Limits{MinCPUs: 2, MaxCPUs: 8}, 2, 1024 * vm.MiB, "minimum 2"},
		{"too much memory", 2, 32768 * vm.MiB, macLimits, 2, 16384 * vm.MiB, "maximum 16384 MiB"},
		{"too little memory", 2, 1 * vm.MiB, macLimits, 2, 4 * vm.MiB, "minimum 4 MiB"},
		{"memory not whole MiB", 2, 1024*vm.MiB + 12345, macLimits, 2, 1024 * vm.MiB, "rounded down to 1024 MiB"},
		{"max not whole MiB", 2, 32768 * vm.MiB, Limits{MaxMemory: 8192*vm.MiB + 7}, 2, 8192 * vm.MiB, "maximum 8192 MiB"},
		{"min not whole MiB", 2, 0, Limits{MinMemory: 3*vm.MiB + 1}, 2, 4 * vm.MiB, "minimum 4 MiB"},
		{"no limits known", 64, 65536 * vm.MiB, Limits{}, 64, 65536 * vm.MiB, ""},
		{"zero memory, no limits", 1, 0, Limits{}, 1, vm.MinMemory, "floor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.CPUs, s.Memory = tc.cpus, tc.memory
			p, err := buildPlan(s, tc.limits)
			if err != nil {
				t.Fatal(err)
			}
			if p.CPUs != tc.wantCPU || p.Memory != tc.wantMem {
				t.Errorf("got %d CPUs %d bytes, want %d CPUs %d bytes", p.CPUs, p.Memory, tc.wantCPU, tc.wantMem)
			}
			if p.Memory%vm.MiB != 0 {
				t.Errorf("memory %d is not a whole number of MiB", p.Memory)
			}
			notes := strings.Join(p.Adjusted, "; ")
			if tc.note == "" && notes != "" || !strings.Contains(notes, tc.note) {
				t.Errorf("adjusted %q, want a note containing %q", notes, tc.note)
			}
		})
	}
}

func TestPlanOptionalDevices(t *testing.T) {
	s := testSpec()
	s.Network, s.ConsoleLog, s.Shares = vm.NetworkOff, "", nil
	p, err := buildPlan(s, macLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p.NAT {
		t.Error("network off still plans a NAT NIC")
	}
	if p.ConsoleLog != "" {
		t.Errorf("console %q with no console log asked for", p.ConsoleLog)
	}
	if len(p.Shares) != 0 {
		t.Errorf("shares %+v", p.Shares)
	}
	if p.VsockPort != VsockPort {
		t.Error("vsock is the only channel and must always be planned")
	}
}

func TestPlanRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*vm.Spec)
		want   string
	}{
		{"tag too long for vz", func(s *vm.Spec) { s.Shares[0].Tag = strings.Repeat("é", 19) }, "over the 36 Virtualization.framework allows"},
		{"empty tag", func(s *vm.Spec) { s.Shares[0].Tag = "" }, "empty tag"},
		{"tag with space", func(s *vm.Spec) { s.Shares[0].Tag = "my share" }, "has a space"},
		{"duplicate tag", func(s *vm.Spec) { s.Shares = append(s.Shares, vm.Share{Tag: "workspace", HostPath: "/x"}) }, "used twice"},
		{"share without dir", func(s *vm.Spec) { s.Shares[0].HostPath = "" }, "no host directory"},
		{"no kernel", func(s *vm.Spec) { s.Kernel = "" }, "sandbar image build"},
		{"disk without path", func(s *vm.Spec) { s.Disks[1].Path = "" }, "disk 1 has no path"},
		{"unknown network", func(s *vm.Spec) { s.Network = "bridged" }, `network "bridged" is unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			tc.mutate(&s)
			_, err := buildPlan(s, macLimits)
			if err == nil {
				t.Fatalf("want an error containing %q", tc.want)
			}
			if !errors.Is(err, vm.ErrInvalidSpec) {
				t.Errorf("errors.Is(err, vm.ErrInvalidSpec) = false for %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestPlanTagAtLimit(t *testing.T) {
	s := testSpec()
	s.Shares[0].Tag = strings.Repeat("a", 36)
	if _, err := buildPlan(s, macLimits); err != nil {
		t.Fatalf("36-byte tag rejected: %v", err)
	}
}

func TestConnectRetryable(t *testing.T) {
	tests := []struct {
		domain string
		code   int
		want   bool
	}{
		{posixDomain, int(syscall.ECONNRESET), true},
		{posixDomain, int(syscall.ENODEV), true},
		{posixDomain, int(syscall.ECONNREFUSED), true},
		{posixDomain, int(syscall.EPERM), false},
		{"VZErrorDomain", int(syscall.ECONNRESET), false},
	}
	for _, tc := range tests {
		if got := connectRetryable(tc.domain, tc.code); got != tc.want {
			t.Errorf("connectRetryable(%s, %d) = %v, want %v", tc.domain, tc.code, got, tc.want)
		}
	}
}

// TestPlanSessionWorkspaceDisk: a session's VM has no share; its clone's
// base disk is the fourth disk, read-only to the hypervisor as well, and
// the guest is told where it is.
func TestPlanSessionWorkspaceDisk(t *testing.T) {
	spec := testSpec()
	spec.Shares = nil
	spec.Disks = append(spec.Disks, vm.Disk{Path: "/p/bases/base-abc.ext4", ReadOnly: true})
	spec.CommandLine = vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: 2, Workspace: 3, Share: "none", Net: GuestNet})
	p, err := buildPlan(spec, macLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Disks) != 4 || p.Disks[3] != (Disk{Path: "/p/bases/base-abc.ext4", ReadOnly: true, Caching: CachingCached, Sync: SyncFull}) {
		t.Errorf("disks %+v: want the base disk read-only as the fourth", p.Disks)
	}
	if !strings.Contains(p.CommandLine, "sandbar.workspace=/dev/vdd") || strings.Contains(p.CommandLine, "sandbar.share=virtiofs") || len(p.Shares) != 0 {
		t.Errorf("command line %q, shares %+v", p.CommandLine, p.Shares)
	}
}

func TestPlanSocketNIC(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "nic")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mac := net.HardwareAddr{0x5a, 0x94, 0xef, 1, 2, 3}
	s := testSpec()
	s.Network, s.NIC = vm.NetworkSocket, &vm.NIC{File: f, MAC: mac, MTU: 65520}
	p, err := buildPlan(s, macLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p.NAT || p.NIC == nil || p.NIC.File != f || p.NIC.MAC != "5a:94:ef:01:02:03" || p.NIC.MTU != 65520 {
		t.Errorf("plan's NIC: nat %v, %+v", p.NAT, p.NIC)
	}
	for _, tc := range []struct {
		name string
		nic  *vm.NIC
		want string
	}{
		{"no socket", nil, "needs a NIC socket"},
		{"MTU below the framework's", &vm.NIC{File: f, MAC: mac, MTU: 1400}, "outside the 1500–65535"},
		{"multicast MAC", &vm.NIC{File: f, MAC: net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}, MTU: 1500}, "not a unicast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.Network, s.NIC = vm.NetworkSocket, tc.nic
			if _, err := buildPlan(s, macLimits); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Virtualization.framework refuses a disk image whose size is not a whole
// number of 512-byte sectors; Boot says so before asking it.
func TestDiskSizeProblem(t *testing.T) {
	for _, size := range []int64{0, 512, 4096, 1 << 20, 8 << 30, 322122752} {
		if why := diskSizeProblem(2, "/s/scratch.img", size); why != "" {
			t.Errorf("%d bytes: %s", size, why)
		}
	}
	for _, size := range []int64{1, 511, 513, 322122547 /* int64(0.3 GiB) */} {
		why := diskSizeProblem(2, "/s/scratch.img", size)
		if !strings.Contains(why, "disk vdc (/s/scratch.img)") || !strings.Contains(why, "512-byte sectors") {
			t.Errorf("%d bytes: %q, want it to name the disk and the sector size", size, why)
		}
	}
}

// TestPlanImageRoot: on another image's root, Sandbar's own root is a
// fifth disk, read-only, which the command line names sandbar.tools.
func TestPlanImageRoot(t *testing.T) {
	spec := testSpec()
	spec.Shares = nil
	spec.Disks[0].Path = "/env/sha256-abc.ext4"
	spec.Disks = append(spec.Disks, vm.Disk{Path: "/p/bases/base-abc.ext4", ReadOnly: true}, vm.Disk{Path: "/img/rootfs.ext4", ReadOnly: true})
	spec.CommandLine = vm.GuestArgs(vm.GuestOptions{Root: 0, Agent: 1, Scratch: 2, Workspace: 3, Tools: 4, Share: "none", Net: GuestNet})
	p, err := buildPlan(spec, macLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Disks) != 5 || p.Disks[0].Path != "/env/sha256-abc.ext4" || !p.Disks[0].ReadOnly ||
		p.Disks[4] != (Disk{Path: "/img/rootfs.ext4", ReadOnly: true, Caching: CachingCached, Sync: SyncFull}) {
		t.Errorf("disks %+v: want the image's root first and Sandbar's own read-only as the fifth", p.Disks)
	}
	if !strings.Contains(p.CommandLine, "sandbar.root=/dev/vda") || !strings.Contains(p.CommandLine, "sandbar.tools=/dev/vde") {
		t.Errorf("command line %q", p.CommandLine)
	}
}
