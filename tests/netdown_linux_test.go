//go:build linux

package tests

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/sandbox"
	"sandbar/vm"
)

// TestNetworkDownStillBoots: a guest given a NIC whose network never
// answers its DHCP request boots anyway, without network, and its
// system:ready says why; the wait for DHCP is bounded, so the boot takes
// a few seconds longer, not the ready timeout.
func TestNetworkDownStillBoots(t *testing.T) {
	img := guestImage(t)
	h := hypervisor(t, img)
	host, guestEnd, _, err := sandbox.NICPair(h)
	if err != nil {
		t.Fatal(err)
	}
	// The network's end reads every frame and answers none.
	var drained sync.WaitGroup
	drained.Go(func() { io.Copy(io.Discard, host) })
	t.Cleanup(func() { host.Close(); drained.Wait() })

	dir := t.TempDir()
	start := time.Now()
	sb := boot(t, sandbox.Options{
		Dir:          dir,
		NIC:          &vm.NIC{File: guestEnd, MAC: net.HardwareAddr{0x52, 0x54, 0x00, 0x5a, 0x4e, 0x01}, MTU: 1500},
		NICArg:       "dhcp",
		ReadyTimeout: time.Minute,
	})
	guestEnd.Close() // QEMU has its own copy
	t.Logf("ready after %s with net_error %q", time.Since(start).Round(time.Millisecond), sb.Ready.NetError)
	if !strings.Contains(sb.Ready.NetError, "DHCP on ") || !strings.Contains(sb.Ready.NetError, "no server offered an address within 3s") {
		t.Errorf("system:ready's net_error = %q, want one saying no DHCP server answered", sb.Ready.NetError)
	}
	// The guest serves: commands run, and it has no route out.
	if got := run(t, sb, "", "cat", "/proc/net/route"); strings.Contains(got, "00000000\t") {
		t.Errorf("a guest without network has a default route:\n%s", got)
	}
	console, _ := os.ReadFile(filepath.Join(dir, sandbox.ConsoleFile))
	if !strings.Contains(string(console), "going on without it") {
		t.Errorf("the console does not say the boot went on without network:\n%s", console)
	}
}
