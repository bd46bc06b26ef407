package libvirt

import (
	"encoding/xml"
	"net"
	"strings"
	"testing"

	"sandbar/vm"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		port     int
	}{
		{"ssh://me@box", "ssh://me@box", 22},
		{"ssh://me@box:2222", "ssh://me@box:2222", 2222},
		{"ssh://me@[fd00::1]:2200", "ssh://me@[fd00::1]:2200", 2200},
	} {
		tg, err := ParseTarget(tc.in)
		if err != nil || tg.String() != tc.want || tg.Port != tc.port {
			t.Errorf("ParseTarget(%q) = %+v %q, %v", tc.in, tg, tg.String(), err)
		}
	}
	for _, bad := range []string{"box", "http://me@box", "ssh://", "ssh://me@box/path", "ssh://me@box:0", "ssh://me@box:99999", "ssh://me:hunter2@box"} {
		_, err := ParseTarget(bad)
		if err == nil {
			t.Errorf("ParseTarget(%q) took it", bad)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseTarget(%q) repeats the password: %v", bad, err)
		}
	}
}

// TestDomainXML: the plan renders a domain libvirt parses, with the
// Spec's disks in order (read-only ones marked), the channel and console
// sockets, the NIC on loopback, Sandbar's metadata, and the guest
// arguments vm/qemu gives under emulation.
func TestDomainXML(t *testing.T) {
	spec := vm.Spec{Name: "sandbar-abc", CPUs: 2, Memory: 1024 * vm.MiB, CommandLine: []string{"panic=-1", "sandbar.net=x&y"},
		NIC: &vm.NIC{MAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, MTU: 65520}, Network: vm.NetworkSocket}
	p := plan{Name: "sandbar-abc", TSCkHz: 2600000, Kernel: "/h/images/k", Initrd: "/h/images/i",
		Disks:   []planDisk{{Path: "/h/images/r", Format: "raw", ReadOnly: true}, {Path: "/h/vms/sandbar-abc/disk1.qcow2", Format: "qcow2"}},
		Channel: "/h/vms/sandbar-abc/channel.sock", Console: "/h/vms/sandbar-abc/console.sock", NICPort: 23456, NICMAC: "02:00:00:00:00:01", NICMTU: 65520,
		Owner: "laptop <pid 1>", Session: "sandbar-abc"}
	x := p.domainXML(spec, true)
	var d struct {
		Type string `xml:"type,attr"`
		Name string `xml:"name"`
		Meta struct {
			Inner string `xml:",innerxml"`
		} `xml:"metadata"`
		Memory string `xml:"memory"`
		OS     struct {
			Cmdline string `xml:"cmdline"`
		} `xml:"os"`
		Devices struct {
			Disks []struct {
				Driver struct {
					Type string `xml:"type,attr"`
				} `xml:"driver"`
				Source struct {
					File string `xml:"file,attr"`
				} `xml:"source"`
				Target struct {
					Dev string `xml:"dev,attr"`
				} `xml:"target"`
				ReadOnly *struct{} `xml:"readonly"`
			} `xml:"disk"`
			Channel struct {
				Source struct {
					Path string `xml:"path,attr"`
				} `xml:"source"`
				Target struct {
					Name string `xml:"name,attr"`
				} `xml:"target"`
			} `xml:"channel"`
			Interface struct {
				Type   string `xml:"type,attr"`
				Source struct {
					Address string `xml:"address,attr"`
					Port    int    `xml:"port,attr"`
				} `xml:"source"`
				MTU struct {
					Size int `xml:"size,attr"`
				} `xml:"mtu"`
			} `xml:"interface"`
		} `xml:"devices"`
	}
	if err := xml.Unmarshal([]byte(x), &d); err != nil {
		t.Fatalf("the domain's XML does not parse: %v\n%s", err, x)
	}
	if d.Type != "qemu" || d.Name != "sandbar-abc" || d.Memory != "1048576" {
		t.Errorf("type %q name %q memory %q", d.Type, d.Name, d.Memory)
	}
	for _, want := range []string{MetadataNS, "laptop &lt;pid 1&gt;", "<sandbar:session>sandbar-abc</sandbar:session>"} {
		if !strings.Contains(d.Meta.Inner, want) {
			t.Errorf("metadata lacks %q: %s", want, d.Meta.Inner)
		}
	}
	if c := d.OS.Cmdline; !strings.HasPrefix(c, "console=ttyS0 cryptomgr.notests panic=-1 sandbar.net=x&y") || !strings.Contains(c, "mitigations=off") || !strings.Contains(c, "tsc_early_khz=2600000") {
		t.Errorf("cmdline %q", c)
	}
	if len(d.Devices.Disks) != 2 || d.Devices.Disks[0].ReadOnly == nil || d.Devices.Disks[1].ReadOnly != nil ||
		d.Devices.Disks[0].Target.Dev != "vda" || d.Devices.Disks[1].Driver.Type != "qcow2" || d.Devices.Disks[1].Target.Dev != "vdb" {
		t.Errorf("disks %+v", d.Devices.Disks)
	}
	if d.Devices.Channel.Target.Name != ChannelName || d.Devices.Channel.Source.Path != p.Channel {
		t.Errorf("channel %+v", d.Devices.Channel)
	}
	if i := d.Devices.Interface; i.Type != "client" || i.Source.Address != "127.0.0.1" || i.Source.Port != 23456 || i.MTU.Size != 65520 {
		t.Errorf("interface %+v", i)
	}
	if strings.Contains(p.domainXML(spec, false), "<mtu") {
		t.Error("withMTU false still sets the MTU")
	}
	p.KVM = true
	if x := p.domainXML(spec, true); !strings.Contains(x, "type='kvm'") || strings.Contains(x, "mitigations=off") || !strings.Contains(x, "host-passthrough") {
		t.Errorf("under KVM: %s", x)
	}
}

func TestX86Guests(t *testing.T) {
	caps := `<capabilities><guest><os_type>hvm</os_type><arch name='i686'><emulator>/usr/bin/qemu-system-i386</emulator><domain type='qemu'/></arch></guest>
<guest><os_type>hvm</os_type><arch name='x86_64'><emulator>/usr/bin/qemu-system-x86_64</emulator><domain type='qemu'/><domain type='kvm'/></arch></guest></capabilities>`
	if e, kvm := x86Guests(caps); e != "/usr/bin/qemu-system-x86_64" || !kvm {
		t.Errorf("x86Guests = %q, %v", e, kvm)
	}
	if e, kvm := x86Guests(strings.Replace(caps, "<domain type='kvm'/>", "", 1)); e == "" || kvm {
		t.Errorf("without kvm: %q, %v", e, kvm)
	}
	if e, _ := x86Guests("<capabilities/>"); e != "" {
		t.Errorf("no guests: %q", e)
	}
}

func TestShq(t *testing.T) {
	if got := shq("a'b c"); got != `'a'\''b c'` {
		t.Errorf("shq = %s", got)
	}
}
