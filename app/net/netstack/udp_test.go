package netstack

import (
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// udpEcho is a UDP server on the host's loopback that echoes what it
// gets and hands it to got.
func udpEcho(t *testing.T) (port uint16, got <-chan string) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:k])
			pc.WriteTo(buf[:k], from)
		}
	}()
	return uint16(pc.LocalAddr().(*net.UDPAddr).Port), ch
}

func TestUDPForward(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			tn := newTestNet(t, netOptions{framing: f})
			port, got := udpEcho(t)

			c := tn.guest.dialUDP(tn.lookup(t, "allowed.test"), port)
			c.SetDeadline(time.Now().Add(wait))
			roundTrip(t, c, "hello")
			if at := tn.attempt(t); at.Dest != (Dest{Name: "allowed.test", Addr: loopback, Port: port, Proto: UDP}) || !at.Verdict.Allow || at.Err != nil {
				t.Errorf("attempt %+v, want allowed.test allowed", at)
			}
			roundTrip(t, c, "again") // the same flow: not decided again

			denied := tn.guest.dialUDP(tn.lookup(t, "denied.test"), port)
			if _, err := denied.Write([]byte("secret")); err != nil {
				t.Fatalf("write: %v", err)
			}
			at := tn.attempt(t)
			if at.Dest != (Dest{Name: "denied.test", Port: port, Proto: UDP}) || at.Verdict.Allow || at.Verdict.Reason != "denied.test is not on the list" {
				t.Errorf("attempt %+v, want denied.test refused", at)
			}
			literal := tn.guest.dialUDP(netip.MustParseAddr("10.0.2.2"), port)
			literal.Write([]byte("literal"))
			if at := tn.attempt(t); at.Dest != (Dest{Addr: netip.MustParseAddr("10.0.2.2"), Port: port, Proto: UDP}) || at.Verdict.Allow {
				t.Errorf("attempt %+v, want the address refused", at)
			}
			// The refusals happened before anything was forwarded; what
			// reaches the host after them is only what was allowed.
			roundTrip(t, c, "after")
			var all []string
			for range 3 {
				all = append(all, recv(t, got, "a datagram reaching the host"))
			}
			if want := []string{"hello", "again", "after"}; !reflect.DeepEqual(all, want) {
				t.Errorf("the host got %q, want %q", all, want)
			}
			if d := tn.decisions(); len(d) != 4 {
				t.Errorf("Decide was asked %+v, want the allowed name twice, the denied name and the address once each", d)
			}
		})
	}
}

// TestUDPOneWay: a flow stays open while either side sends (here only
// the host, for several idle periods), and ends once neither has for
// UDPIdle, freeing its connection slot.
func TestUDPOneWay(t *testing.T) {
	const idle = 300 * time.Millisecond
	tn := newTestNet(t, netOptions{cfg: Config{UDPIdle: idle}})
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		_, from, err := pc.ReadFrom(make([]byte, 64))
		if err != nil {
			return
		}
		// A stream the guest only listens to, five idle periods long.
		tick := time.NewTicker(idle / 6)
		defer tick.Stop()
		for i := range 30 {
			<-tick.C
			pc.WriteTo([]byte(strconv.Itoa(i)), from)
		}
		pc.WriteTo([]byte("last"), from)
	}()
	port := uint16(pc.LocalAddr().(*net.UDPAddr).Port)

	c := tn.guest.dialUDP(tn.lookup(t, "stream.test"), port)
	c.Write([]byte("start"))
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 64)
	for got := 0; ; got++ {
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d datagrams of the host's stream: %v", got, err)
		}
		if string(buf[:k]) == "last" {
			break
		}
	}
	tn.attempt(t)

	// Quiet both ways now: the flow ends and gives its slot back.
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(idle / 10)
	defer tick.Stop()
	for len(tn.conns) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle UDP flow still holds its slot after %s", wait)
		}
		<-tick.C
	}
}

// TestUDPNeverDialed: a datagram to an address no honest guest sends to,
// written raw, is refused before the policy is asked, even one that
// allows everything: on the host, 0.0.0.0 is the host itself.
func TestUDPNeverDialed(t *testing.T) {
	tn := newTestNet(t, netOptions{cfg: Config{Decide: func(Dest) Verdict { return Verdict{Allow: true} }}})
	port, _ := udpEcho(t)
	for _, dst := range []string{"0.0.0.0", "0.1.2.3"} {
		a := netip.MustParseAddr(dst)
		decided, dials := len(tn.decisions()), len(tn.dials())
		tn.guest.writeFrame(fromGuest(header.IPv4ProtocolNumber, udpPacket(GuestIP, a, 40000, port, []byte("to the host itself"))))
		at := tn.attempt(t)
		if at.Dest != (Dest{Addr: a, Port: port, Proto: UDP}) || at.Verdict.Allow || !strings.Contains(at.Verdict.Reason, "not an address to connect to") {
			t.Errorf("%s: attempt %+v, want it refused as no address to connect to", dst, at)
		}
		if got := tn.decisions()[decided:]; len(got) != 0 {
			t.Errorf("%s: Decide was asked %+v", dst, got)
		}
		if got := tn.dials()[dials:]; len(got) != 0 {
			t.Errorf("%s: the host dialed %v", dst, got)
		}
	}
}
