package netstack

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// guestEcho listens on the guest's port and echoes every connection.
func guestEcho(t *testing.T, g *testGuest, port uint16) {
	t.Helper()
	ln, err := gonet.ListenTCP(g.stack, tcpip.FullAddress{NIC: 1, Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatalf("guest listen on %d: %v", port, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	// Registered after the guest's own cleanup, so it runs before it.
	// The guest's connections are closed too: one whose network has
	// gone would wait for its peer for ever.
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
}

func dialHost(t *testing.T, port uint16) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), wait)
	if err != nil {
		t.Fatalf("dial 127.0.0.1:%d: %v", port, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// takenPort is a loopback port another listener holds for the test.
func takenPort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

func TestOriginLabel(t *testing.T) {
	for in, want := range map[string]string{
		"a1b2c3d4e5":            "a1b2c3d4e5",
		"My Session_1":          "mysession1",
		"-x-":                   "x",
		"":                      "sandbar",
		"é/..":                  "sandbar",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
	} {
		if got := OriginLabel(in); got != want {
			t.Errorf("OriginLabel(%q) = %q, want %q", in, got, want)
		}
	}
	if got := PortURL("ab12", 41873); got != "http://ab12.localhost:41873/" {
		t.Errorf("PortURL = %q", got)
	}
}

func TestPublish(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	// A guest port published on the same number, free on the host.
	same := closedPort(t)
	guestEcho(t, tn.guest, same)
	guestEcho(t, tn.guest, 8080)

	p, err := tn.Publish(same, same)
	if err != nil {
		t.Fatalf("Publish(%d, %d): %v", same, same, err)
	}
	if p.Guest != same || p.Host != same {
		t.Errorf("Publish(%d, %d) = %v, want the same number on the host", same, same, p)
	}
	roundTrip(t, dialHost(t, p.Host), "through the published port")
	if again, err := tn.Publish(same, 0); err != nil || again != p {
		t.Errorf("publishing %d again: %v, %v; want %v as it is", same, again, err, p)
	}

	// Host port 0: any free one.
	taken := takenPort(t)
	guestEcho(t, tn.guest, taken)
	other, err := tn.Publish(taken, 0)
	if err != nil {
		t.Fatalf("Publish(%d, 0): %v", taken, err)
	}
	if other.Host == taken || other.Host == 0 {
		t.Errorf("Publish(%d, 0) = %v, want another free port", taken, other)
	}
	roundTrip(t, dialHost(t, other.Host), "through another port")

	// A host port asked for that is taken: an error that says what to do.
	_, err = tn.Publish(8080, taken)
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Publish(8080, %d) with %d taken: %v, want ErrPortInUse", taken, taken, err)
	}
	if !strings.Contains(err.Error(), "pick another host port") {
		t.Errorf("error %q does not say what to do", err)
	}
	explicit, err := tn.Publish(8080, closedPort(t))
	if err != nil {
		t.Fatalf("Publish(8080, a free port): %v", err)
	}
	roundTrip(t, dialHost(t, explicit.Host), "through the port asked for")

	want := []Port{p, other, explicit}
	slices.SortFunc(want, func(a, b Port) int { return int(a.Guest) - int(b.Guest) })
	if got := tn.Published(); !reflect.DeepEqual(got, want) {
		t.Errorf("Published() = %v, want %v", got, want)
	}

	for _, p := range want {
		if u := fmt.Sprintf("http://sandbar.localhost:%d/", p.Host); p.URL != u {
			t.Errorf("port %d opens at %q, want %q (no Config.Origin: the default label)", p.Guest, p.URL, u)
		}
	}

	if _, err := tn.Publish(0, 0); err == nil {
		t.Errorf("Publish(0, 0) published the guest's port 0")
	}
}

// TestUnpublish closes the host's listener and the connections through
// it.
func TestUnpublish(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	guestEcho(t, tn.guest, 8080)
	p, err := tn.Publish(8080, 0)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	live := dialHost(t, p.Host)
	roundTrip(t, live, "before")

	if !tn.Unpublish(8080) {
		t.Fatalf("Unpublish(8080) = false for a published port")
	}
	live.SetDeadline(time.Now().Add(wait))
	if _, err := live.Read(make([]byte, 1)); err == nil {
		t.Errorf("a connection through the unpublished port still reads")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection through the unpublished port stayed open")
	}
	if c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p.Host)))); err == nil {
		c.Close()
		t.Errorf("127.0.0.1:%d still accepts after Unpublish", p.Host)
	}
	if got := tn.Published(); len(got) != 0 {
		t.Errorf("Published() = %v after Unpublish", got)
	}
	if tn.Unpublish(8080) {
		t.Errorf("Unpublish(8080) = true for a port no longer published")
	}
}

// TestPublishNoGuestListener: a host connection to a published port the
// guest does not serve is closed, not left hanging.
func TestPublishNoGuestListener(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	p, err := tn.Publish(8081, 0)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	c := dialHost(t, p.Host)
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read from a port the guest does not serve: %v, want it closed", err)
	}
}

func TestPublishAfterClose(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	guestEcho(t, tn.guest, 8080)
	p, err := tn.Publish(8080, 0)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	live := dialHost(t, p.Host)
	roundTrip(t, live, "before")
	tn.Close()
	live.SetDeadline(time.Now().Add(wait))
	if _, err := live.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read through a published port after Close: %v, want it closed", err)
	}
	if _, err := tn.Publish(8080, 0); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Publish after Close: %v, want net.ErrClosed", err)
	}
	if got := tn.Published(); len(got) != 0 {
		t.Errorf("Published() = %v after Close", got)
	}
}

// TestPublishAgainOnAnotherHostPort: a guest port published already and
// asked for on another host port moves there (sandbar ports ID publish
// 8000:8000 after the guest's own 8000 was published on a free port);
// that port being taken, the error says so and where it stays.
func TestPublishAgainOnAnotherHostPort(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	guestEcho(t, tn.guest, 8000)
	first, err := tn.Publish(8000, 0)
	if err != nil {
		t.Fatalf("Publish(8000, 0): %v", err)
	}

	taken := takenPort(t)
	_, err = tn.Publish(8000, taken)
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("Publish(8000, %d) with %d taken: %v, want ErrPortInUse", taken, taken, err)
	}
	for _, want := range []string{fmt.Sprintf("127.0.0.1:%d is taken", taken), fmt.Sprintf("stays published on 127.0.0.1:%d", first.Host), "pick another host port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := tn.Published(); !reflect.DeepEqual(got, []Port{first}) {
		t.Errorf("Published() = %v after the refused move, want %v", got, []Port{first})
	}
	roundTrip(t, dialHost(t, first.Host), "through the port that stayed")

	free := closedPort(t)
	moved, err := tn.Publish(8000, free)
	if err != nil {
		t.Fatalf("Publish(8000, %d) with %d free: %v", free, free, err)
	}
	if moved.Guest != 8000 || moved.Host != free {
		t.Errorf("Publish(8000, %d) = %v, want it moved to %d", free, moved, free)
	}
	roundTrip(t, dialHost(t, free), "through the port it moved to")
	if c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(first.Host)))); err == nil {
		c.Close()
		t.Errorf("127.0.0.1:%d still accepts after the port moved", first.Host)
	}
	if got := tn.Published(); !reflect.DeepEqual(got, []Port{moved}) {
		t.Errorf("Published() = %v, want %v", got, []Port{moved})
	}
	if again, err := tn.Publish(8000, 0); err != nil || again != moved {
		t.Errorf("Publish(8000, 0) after the move: %v, %v; want %v as it is", again, err, moved)
	}
}
