//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDHCPRoundTrip(t *testing.T) {
	mac := net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	req := dhcpPacket{op: 1, xid: 0xdeadbeef, flags: 0x8000, chaddr: mac, msgType: dhcpRequest,
		options: map[byte][]byte{optRequestIP: {10, 0, 2, 15}, optServerID: {10, 0, 2, 2}, optHostname: []byte("sandbar"),
			optParamList: {optSubnetMask, optRouter, optDNS}}}
	b := req.marshal()
	if len(b) < 300 || string(b[236:240]) != dhcpMagic || b[1] != 1 || b[2] != 6 {
		t.Fatalf("bad BOOTP framing: len %d", len(b))
	}
	got, err := parseDHCP(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.xid != req.xid || got.flags != 0x8000 || got.msgType != dhcpRequest || got.chaddr.String() != mac.String() {
		t.Fatalf("got %+v", got)
	}
	for code, v := range req.options {
		if !bytes.Equal(got.options[code], v) {
			t.Errorf("option %d = %v, want %v", code, got.options[code], v)
		}
	}
}

// testAck is a server's ACK as bytes, written independently of marshal.
func testAck(opts ...byte) []byte {
	b := make([]byte, 240)
	b[0], b[1], b[2] = 2, 1, 6
	copy(b[4:], []byte{0xde, 0xad, 0xbe, 0xef})
	copy(b[16:], []byte{192, 168, 64, 7})
	copy(b[28:], []byte{0x52, 0x54, 0, 0x12, 0x34, 0x56})
	copy(b[236:], dhcpMagic)
	return append(append(b, opts...), optEnd)
}

func TestParseDHCPAndLease(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    lease
		wantErr string
	}{
		{
			name: "full ack",
			in: testAck(optMsgType, 1, dhcpAck, optPad, optSubnetMask, 4, 255, 255, 255, 0,
				optRouter, 8, 192, 168, 64, 1, 192, 168, 64, 254, optDNS, 4, 192, 168, 64, 1, optLeaseTime, 4, 0, 0, 0x0e, 0x10),
			want: lease{addr: netip.MustParsePrefix("192.168.64.7/24"), router: netip.MustParseAddr("192.168.64.1"), dns: netip.MustParseAddr("192.168.64.1")},
		},
		{
			name: "no mask, router or dns",
			in:   testAck(optMsgType, 1, dhcpAck),
			want: lease{addr: netip.MustParsePrefix("192.168.64.7/24")},
		},
		{
			name: "/20 mask",
			in:   testAck(optMsgType, 1, dhcpAck, optSubnetMask, 4, 255, 255, 240, 0),
			want: lease{addr: netip.MustParsePrefix("192.168.64.7/20")},
		},
		{name: "no message type", in: testAck(), wantErr: "without a message type"},
		{name: "truncated option", in: testAck(optMsgType, 1, dhcpAck, optRouter, 9, 1, 2), wantErr: "truncated"},
		{name: "not dhcp", in: make([]byte, 300), wantErr: "not a DHCP message"},
		{name: "short", in: []byte{2, 1, 6}, wantErr: "not a DHCP message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseDHCP(tt.in)
			if err == nil {
				var l lease
				l, err = leaseFrom(p)
				if err == nil && tt.wantErr == "" && l != tt.want {
					t.Fatalf("lease = %+v, want %+v", l, tt.want)
				}
			}
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestBroadcast(t *testing.T) {
	for in, want := range map[string]string{"10.0.2.15/24": "10.0.2.255", "192.168.64.7/20": "192.168.79.255", "10.0.0.1/32": "invalid IP"} {
		if got := broadcast(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("broadcast(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFindEthernet(t *testing.T) {
	sys := t.TempDir()
	for name, typ := range map[string]string{"lo": "772", "sit0": "776", "eth1": "1", "enp0s1": "1"} {
		os.MkdirAll(filepath.Join(sys, name), 0o755)
		os.WriteFile(filepath.Join(sys, name, "type"), []byte(typ+"\n"), 0o644)
	}
	got, err := findEthernet(sys)
	if err != nil || got != "enp0s1" {
		t.Fatalf("findEthernet = %q, %v; want enp0s1", got, err)
	}
	if _, err := findEthernet(t.TempDir()); err == nil || !strings.Contains(err.Error(), "sandbar.net=none") {
		t.Fatalf("err = %v, want advice to pass sandbar.net=none", err)
	}
}

func TestHostsHas(t *testing.T) {
	tests := []struct {
		hosts string
		want  bool
	}{
		{"127.0.0.1 localhost\n127.0.1.1\tsandbar\n", true},
		{"127.0.0.1 localhost sandbar.local\n", false},
		{"# 127.0.1.1 sandbar\n", false},
		{"sandbar\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hostsHas([]byte(tt.hosts), "sandbar"); got != tt.want {
			t.Errorf("hostsHas(%q) = %v, want %v", tt.hosts, got, tt.want)
		}
	}
}

// TestSetMTU sets lo's MTU in a network namespace of its own (a user
// namespace gives the rights), where it changes nothing of the machine's.
func TestSetMTU(t *testing.T) {
	if os.Getenv("SANDBAR_TEST_MTU_CHILD") == "1" {
		mtuChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSetMTU$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBAR_TEST_MTU_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Skipf("cannot make a user and network namespace here: %v", err)
	}
	if err != nil || !bytes.Contains(out, []byte("mtu child ok")) {
		t.Fatalf("in a namespace of its own: %v\n%s", err, out)
	}
}

func mtuChild() {
	fail := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
		os.Exit(1)
	}
	if err := setMTU("lo", 9000); err != nil {
		fail("setMTU(lo, 9000): %v", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fail("socket: %v", err)
	}
	ifr, _ := unix.NewIfreq("lo")
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil || ifr.Uint32() != 9000 {
		fail("lo's MTU reads %d (%v), want 9000", ifr.Uint32(), err)
	}
	if err := setMTU("sandbar-none0", 1500); !errors.Is(err, unix.ENODEV) {
		fail("setMTU of a missing interface: %v, want ENODEV", err)
	}
	fmt.Println("mtu child ok")
}

// TestNetworkFailureIsNotFatal: a network that does not come up is
// reported, on the console and to the supervisor, and the boot goes on.
func TestNetworkFailureIsNotFatal(t *testing.T) {
	noNIC := t.TempDir() // a /sys/class/net without an ethernet interface
	up := func(err error) <-chan error {
		ch := make(chan error, 1)
		ch <- err
		return ch
	}
	static, err := parseNet("static:192.168.127.2/24,192.168.127.1,192.168.127.1,mtu=65520")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		n        netConfig
		loopback error
		want     string // in the reason; "" for none
	}{
		{"off", netConfig{mode: "none"}, nil, ""},
		{"static without a NIC", static, nil, "no ethernet interface"},
		{"dhcp without a NIC", netConfig{mode: "dhcp"}, nil, "no ethernet interface"},
		{"loopback failed", netConfig{mode: "none"}, errors.New("bring up lo: operation not permitted"), "bring up lo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := &console{out: &out}
			why := networkOrWhy(c, tt.n, up(tt.loopback), noNIC)
			if tt.want == "" {
				if why != "" || out.Len() != 0 {
					t.Fatalf("reason %q, console %q; want neither", why, out.String())
				}
				return
			}
			if !strings.Contains(why, tt.want) {
				t.Errorf("reason %q, want one containing %q", why, tt.want)
			}
			if !strings.Contains(out.String(), why+": going on without it") {
				t.Errorf("console %q does not say the boot goes on without network", out.String())
			}
		})
	}
}
