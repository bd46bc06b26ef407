package qemu

import (
	"runtime"
	"testing"

	"sandbar/vm"
)

func TestInfo(t *testing.T) {
	i := New(Config{Share: "9p"}).Info()
	if i.Share() != vm.Share9p || i.SocketFraming != vm.FramingStream || i.Channel != vm.ChannelSerial {
		t.Errorf("Info() = %+v: want 9p shares (forced), stream NIC sockets, the serial channel", i)
	}
	for _, n := range []vm.Network{vm.NetworkOff, vm.NetworkNAT, vm.NetworkSocket} {
		if !i.Supports(n) {
			t.Errorf("Info() lacks network %q", n)
		}
	}
	if !i.Features.OwnProcess || i.Features.DiesWithOwner != (runtime.GOOS == "linux") {
		t.Errorf("Features = %+v: QEMU is a process of its own, which dies with its owner only on Linux", i.Features)
	}
	if New(Config{NoParentDeath: true}).Info().Features.DiesWithOwner {
		t.Errorf("NoParentDeath: the features still say QEMU dies with its owner")
	}
	for _, pd := range []bool{true, false} {
		p, err := buildPlan(testSpec(), settings{Binary: "qemu", Arch: "amd64", SocketDir: "/s", ParentDeath: pd})
		if err != nil || p.ParentDeath != pd {
			t.Errorf("settings.ParentDeath %v: plan's %v, %v", pd, p.ParentDeath, err)
		}
	}
}
