package netstack

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// ownAddr is one of this machine's IPv4 addresses other than loopback;
// the test skips when it has none.
func ownAddr(t *testing.T) netip.Addr {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() {
				return ip.Unmap()
			}
		}
	}
	t.Skip("this machine has no IPv4 address but loopback")
	return netip.Addr{}
}

// TestOwnAddressesNeverDialed: the host's own addresses reach its
// services on every interface (0.0.0.0), past any firewall in front of
// the machine, whatever the policy allows: a public address of the host
// is no "public host", by IP literal, by a name that resolves to it, or
// over UDP.
func TestOwnAddressesNeverDialed(t *testing.T) {
	own := ownAddr(t)
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	udp, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpPort := uint16(udp.LocalAddr().(*net.UDPAddr).Port)

	tn := newTestNet(t, netOptions{cfg: Config{
		// A policy that allows everything: the network alone must refuse.
		Decide: func(Dest) Verdict { return Verdict{Allow: true, Reason: "everything is allowed", Rule: "allow *"} },
		Resolve: func(_ context.Context, name string) ([]netip.Addr, error) {
			return []netip.Addr{own}, nil
		},
	}})
	for _, target := range []struct {
		name string
		addr func(*testing.T) netip.Addr
	}{
		{"the address", func(*testing.T) netip.Addr { return own }},
		{"a name that resolves to it", func(t *testing.T) netip.Addr { return tn.lookup(t, "myself.test") }},
	} {
		t.Run(target.name, func(t *testing.T) {
			c, err := tn.guest.dialTCP(dialCtx(t), target.addr(t), port)
			if err == nil {
				c.Close()
				t.Fatalf("the guest connected to the host's own %s:%d", own, port)
			}
			a := tn.attempt(t)
			if a.Verdict.Allow && a.Err == nil {
				t.Errorf("attempt %+v: allowed, and made", a)
			}
		})
	}
	c := tn.guest.dialUDP(own, udpPort)
	c.Write([]byte("from the guest"))
	udp.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 64)
	if k, _, err := udp.ReadFrom(buf); err == nil {
		t.Errorf("the host's own %s:%d got a datagram from the guest: %q", own, udpPort, buf[:k])
	}
	select {
	case <-accepted:
		t.Errorf("the host's service on 0.0.0.0:%d accepted a connection from the guest", port)
	default:
	}
	a := tn.attempt(t)
	if a.Dest.Proto != UDP || !strings.Contains(a.Verdict.Reason, "this machine's own") {
		t.Errorf("the UDP attempt: %+v", a)
	}
}
