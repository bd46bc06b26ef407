package vm

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func validSpec() Spec {
	return Spec{
		Kernel: "/img/kernel", Initramfs: "/img/initramfs",
		Disks:  []Disk{{Path: "/img/rootfs.ext4", ReadOnly: true}},
		Shares: []Share{{Tag: "workspace", HostPath: "/home/ann/my repo"}},
		CPUs:   2, Memory: 2048 * MiB, Network: NetworkNAT, Dir: "/tmp/s",
	}
}

func TestValidate(t *testing.T) {
	host := Host{CPUs: 4, Memory: 8192 * MiB}
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string // substring of the error; "" = valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"zero cpus", func(s *Spec) { s.CPUs = 0 }, "vCPUs is 0: give at least 1"},
		{"too many cpus", func(s *Spec) { s.CPUs = 5 }, "vCPUs is 5 but this machine has 4"},
		{"memory below floor", func(s *Spec) { s.Memory = 64 * MiB }, "memory is 64 MiB, below the guest's floor of 256 MiB"},
		{"memory above host", func(s *Spec) { s.Memory = 16384 * MiB }, "memory is 16384 MiB but this machine has 8192 MiB"},
		{"unknown network", func(s *Spec) { s.Network = "bridge" }, `network "bridge" is unknown`},
		{"no kernel", func(s *Spec) { s.Kernel = "" }, "sandbar image build"},
		{"bad tag", func(s *Spec) { s.Shares[0].Tag = "a b" }, `share tag "a b" is not valid`},
		{"dup tag", func(s *Spec) { s.Shares = append(s.Shares, s.Shares[0]) }, "used twice"},
		{"relative share", func(s *Spec) { s.Shares[0].HostPath = "repo" }, "not absolute"},
		{"no dir", func(s *Spec) { s.Dir = "" }, "no VM directory"},
		{"socket network", func(s *Spec) { s.Network, s.NIC = NetworkSocket, testNIC(65520) }, ""},
		{"socket network without a socket", func(s *Spec) { s.Network = NetworkSocket }, "needs a NIC socket"},
		{"NIC with the NAT", func(s *Spec) { s.NIC = testNIC(1500) }, "a NIC socket is given but the network is"},
		{"NIC MTU too small", func(s *Spec) { s.Network, s.NIC = NetworkSocket, testNIC(60) }, "MTU 60 is outside"},
		{"NIC multicast MAC", func(s *Spec) {
			s.Network, s.NIC = NetworkSocket, testNIC(1500)
			s.NIC.MAC = net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}
		}, "multicast"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			err := s.Validate(host)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid spec rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got nil", tc.want)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("errors.Is(err, ErrInvalidSpec) = false for %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	s := validSpec()
	s.CPUs, s.Memory = 0, 0
	var se *SpecError
	if err := s.Validate(Host{}); !errors.As(err, &se) || len(se.Problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
}

func TestGuestArgs(t *testing.T) {
	base := GuestOptions{Root: 0, Agent: 1, Scratch: -1, Workspace: -1, Share: "9p", Net: "none", Time: time.Unix(1700000000, 0)}
	const want = "panic=-1 quiet loglevel=3 sandbar.root=/dev/vda sandbar.agent=/dev/vdb sandbar.share=9p sandbar.net=none sandbar.time=1700000000"
	for _, tt := range []struct {
		channel Channel
		want    string
	}{
		{"", want},
		{ChannelAuto, want},
		{ChannelSerial, strings.Replace(want, " sandbar.time", " sandbar.channel=serial sandbar.time", 1)},
		{ChannelVsock, strings.Replace(want, " sandbar.time", " sandbar.channel=vsock sandbar.time", 1)},
	} {
		o := base
		o.Channel = tt.channel
		if got := strings.Join(GuestArgs(o), " "); got != tt.want {
			t.Errorf("channel %q:\ngot  %q\nwant %q", tt.channel, got, tt.want)
		}
	}
}

type fakeHV struct{ name string }

func (f fakeHV) Name() string                                { return f.name }
func (f fakeHV) Check(context.Context) Status                { return Status{Available: true} }
func (f fakeHV) Info() Info                                  { return Info{} }
func (f fakeHV) Boot(context.Context, Spec) (Machine, error) { return nil, ErrUnavailable }

func TestInfo(t *testing.T) {
	none := Info{}
	if none.Share() != ShareNone || none.Supports(NetworkOff) {
		t.Errorf("an empty Info: share %q, supports off %v", none.Share(), none.Supports(NetworkOff))
	}
	i := Info{ShareKinds: []ShareKind{ShareVirtiofs, Share9p}, Networks: []Network{NetworkOff, NetworkSocket}}
	if i.Share() != ShareVirtiofs {
		t.Errorf("share = %q, want the first kind, virtiofs", i.Share())
	}
	if !i.Supports(NetworkSocket) || i.Supports(NetworkNAT) {
		t.Errorf("supports socket %v, nat %v; want true, false", i.Supports(NetworkSocket), i.Supports(NetworkNAT))
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if _, err := r.Default(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty registry: %v", err)
	}
	r.Register(fakeHV{"qemu"}, false)
	r.Register(fakeHV{"vz"}, true)
	if h, _ := r.Default(); h.Name() != "vz" {
		t.Errorf("default = %s, want vz", h.Name())
	}
	if h, _ := r.Get("qemu"); h.Name() != "qemu" {
		t.Errorf("Get(qemu) = %s", h.Name())
	}
	if _, err := r.Get("xen"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "qemu, vz") {
		t.Errorf("Get(xen) = %v", err)
	}
}

// testNIC is a socket-attached NIC on a file that is only a stand-in: Validate
// does not read it.
func testNIC(mtu int) *NIC {
	return &NIC{File: os.Stdin, MAC: net.HardwareAddr{0x5a, 0x94, 0xef, 1, 2, 3}, MTU: mtu}
}
