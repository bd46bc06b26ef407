//go:build linux

package main

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    config
		wantErr string
	}{
		{
			name: "nothing sandbar",
			in:   "console=ttyS0 panic=-1 BOOT_IMAGE=/vmlinuz\n",
			want: config{share: "none", net: netConfig{mode: "none"}, modParams: map[string][]string{}, console: "ttyS0"},
		},
		{
			name: "everything",
			in: "console=ttyS0 sandbar.root=/dev/vda sandbar.agent=/dev/vdb sandbar.scratch=/dev/vdc sandbar.share=virtiofs " +
				"sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3 sandbar.time=1700000000 sandbar.debug=1",
			want: config{
				root: "/dev/vda", agent: "/dev/vdb", scratch: "/dev/vdc", share: "virtiofs",
				net: netConfig{mode: "static", addr: netip.MustParsePrefix("10.0.2.15/24"),
					gateway: netip.MustParseAddr("10.0.2.2"), dns: netip.MustParseAddr("10.0.2.3")},
				time: 1700000000, debug: true, modParams: map[string][]string{}, console: "ttyS0",
			},
		},
		{
			name: "trial",
			in:   "console=ttyS0 panic=-1 quiet sandbar.trial=1",
			want: config{share: "none", net: netConfig{mode: "none"}, modParams: map[string][]string{}, trial: true, console: "ttyS0"},
		},
		{
			name: "the last console is /dev/console",
			in:   "console=tty0 console=hvc0,115200n8 quiet",
			want: config{share: "none", net: netConfig{mode: "none"}, modParams: map[string][]string{}, console: "hvc0"},
		},
		{
			name: "dhcp and 9p, module params, unknown key",
			in:   "sandbar.net=dhcp sandbar.share=9p virtio_mmio.device=512@0xfeb00e00:12 virtio-mmio.device=512@0xfeb00c00:11 sandbar.colour=blue",
			want: config{share: "9p", net: netConfig{mode: "dhcp"},
				modParams: map[string][]string{"virtio_mmio": {"device=512@0xfeb00e00:12", "device=512@0xfeb00c00:11"}},
				unknown:   []string{"sandbar.colour"}},
		},
		{name: "bad share", in: "sandbar.share=nfs", wantErr: "want virtiofs, 9p or none"},
		{name: "bad net", in: "sandbar.net=wifi", wantErr: "want none, dhcp or static"},
		{name: "static missing dns", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2", wantErr: "want static:<ip>/<prefix>,<gateway>,<dns>[,mtu=<n>]"},
		{name: "static bad prefix", in: "sandbar.net=static:10.0.2.15,10.0.2.2,10.0.2.3", wantErr: "not an IPv4 <ip>/<prefix>"},
		{name: "static bad gateway", in: "sandbar.net=static:10.0.2.15/24,gw,10.0.2.3", wantErr: "gateway"},
		{
			name: "static with mtu",
			in:   "sandbar.net=static:192.168.127.2/24,192.168.127.1,192.168.127.1,mtu=65520",
			want: config{share: "none", modParams: map[string][]string{},
				net: netConfig{mode: "static", addr: netip.MustParsePrefix("192.168.127.2/24"),
					gateway: netip.MustParseAddr("192.168.127.1"), dns: netip.MustParseAddr("192.168.127.1"), mtu: 65520}},
		},
		{
			name: "static with the smallest mtu",
			in:   "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=68",
			want: config{share: "none", modParams: map[string][]string{},
				net: netConfig{mode: "static", addr: netip.MustParsePrefix("10.0.2.15/24"),
					gateway: netip.MustParseAddr("10.0.2.2"), dns: netip.MustParseAddr("10.0.2.3"), mtu: 68}},
		},
		{name: "mtu too small", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=67", wantErr: `mtu "67" is not a number from 68 to 65535`},
		{name: "mtu too large", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=65536", wantErr: "from 68 to 65535"},
		{name: "mtu not a number", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=jumbo", wantErr: `mtu "jumbo"`},
		{name: "mtu empty", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=", wantErr: `mtu ""`},
		{name: "mtu negative", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=-1500", wantErr: "from 68 to 65535"},
		{name: "fourth field not mtu", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,1500", wantErr: `the fourth field "1500" is not mtu=<n>`},
		{name: "mtu with a fifth field", in: "sandbar.net=static:10.0.2.15/24,10.0.2.2,10.0.2.3,mtu=1500,x", wantErr: "want static:<ip>/<prefix>,<gateway>,<dns>[,mtu=<n>]"},
		{name: "mtu on dhcp", in: "sandbar.net=dhcp,mtu=1500", wantErr: "want none, dhcp or static"},
		{name: "bad time", in: "sandbar.time=yesterday", wantErr: "want unix seconds"},
		{name: "root not a device", in: "sandbar.root=vda", wantErr: "sandbar.root=\"vda\""},
		{
			name: "a session: workspace disk, no share",
			in:   "sandbar.root=/dev/vda sandbar.agent=/dev/vdb sandbar.scratch=/dev/vdc sandbar.workspace=/dev/vdd sandbar.share=none",
			want: config{root: "/dev/vda", agent: "/dev/vdb", scratch: "/dev/vdc", workspace: "/dev/vdd", share: "none",
				net: netConfig{mode: "none"}, modParams: map[string][]string{}},
		},
		{name: "workspace not a device", in: "sandbar.workspace=../x", wantErr: "sandbar.workspace=\"../x\""},
		{
			name: "an image's root, Sandbar's own for its tools",
			in:   "sandbar.root=/dev/vda sandbar.agent=/dev/vdb sandbar.scratch=/dev/vdc sandbar.workspace=/dev/vdd sandbar.tools=/dev/vde",
			want: config{root: "/dev/vda", agent: "/dev/vdb", scratch: "/dev/vdc", workspace: "/dev/vdd", tools: "/dev/vde", share: "none",
				net: netConfig{mode: "none"}, modParams: map[string][]string{}},
		},
		{name: "tools not a device", in: "sandbar.tools=vde", wantErr: "sandbar.tools=\"vde\""},
		{
			name: "the host names its channel",
			in:   "console=hvc0 sandbar.channel=vsock",
			want: config{share: "none", net: netConfig{mode: "none"}, modParams: map[string][]string{}, console: "hvc0", channel: "vsock"},
		},
		{
			name: "serial channel",
			in:   "sandbar.channel=serial",
			want: config{share: "none", net: netConfig{mode: "none"}, modParams: map[string][]string{}, channel: "serial"},
		},
		{name: "bad channel", in: "sandbar.channel=pigeon", wantErr: "want auto, serial or vsock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCmdline(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.channel == "" {
				tt.want.channel = "auto"
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
