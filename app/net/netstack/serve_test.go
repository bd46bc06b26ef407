package netstack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestStreamCorrupt: a length no frame can have ends the stream at once,
// without allocating it, and the network serves the next link.
func TestStreamCorrupt(t *testing.T) {
	for _, length := range []uint32{maxDiscard + 1, 1 << 31, 1<<32 - 1} {
		t.Run(fmt.Sprint(length), func(t *testing.T) {
			tn := newTestNet(t, netOptions{})
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			tn.guest.writeRaw(binary.BigEndian.AppendUint32(nil, length))
			err := tn.served(t, fmt.Sprintf("Serve ending on a frame length of %d", length))
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("Serve after a frame length of %d: %v, want the stream called corrupt", length, err)
			}
			if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 64<<20 {
				t.Errorf("Serve allocated %d MiB reading a frame length of %d", grew>>20, length)
			}
			tn.guest.close()
			tn.attach(t, Stream)
			tn.lookup(t, "next.boot.test")
		})
	}
}

// TestStreamEndsMidFrame: a stream that ends inside a frame ends Serve
// without an error, as a VM that stops does.
func TestStreamEndsMidFrame(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	frame := dnsFrame(t, "cut.test.")
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
	tn.guest.writeRaw(append(msg, frame[:20]...))
	tn.guest.close()
	if err := tn.served(t, "Serve ending"); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeOneLinkAtATime: a second link while one is attached is
// refused and closed; once the first ends, the next VM boot's is served.
func TestServeOneLinkAtATime(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	host, guest := socketPair(t, Stream)
	defer guest.Close()
	if err := tn.Serve(context.Background(), host, Stream); err == nil {
		t.Fatalf("a second Serve while one serves returned nil")
	}
	guest.SetReadDeadline(time.Now().Add(wait))
	if _, err := guest.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the refused link is still open: %v", err)
	}

	tn.guest.close()
	if err := tn.served(t, "Serve ending with its guest"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	tn.attach(t, Datagram)
	tn.lookup(t, "second.boot.test")
}

func TestServeAfterClose(t *testing.T) {
	n, err := New(Config{Decide: testPolicy, GuestMAC: testGuestMAC})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	host, guest := socketPair(t, Stream)
	defer guest.Close()
	if err := n.Serve(context.Background(), host, Stream); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close: %v, want net.ErrClosed", err)
	}
}

// TestServeContext: cancelling Serve's context ends it (the only way to
// end a datagram link, whose peer closing is never seen).
func TestServeContext(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			checkGoroutines(t)
			n, err := New(Config{Decide: testPolicy, GuestMAC: testGuestMAC})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			host, guest := socketPair(t, f)
			defer guest.Close()
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- n.Serve(ctx, host, f) }()
			cancel()
			if err := recv(t, served, "Serve ending with its context"); err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}

// TestCloseWhileServing closes the network while the guest floods it
// with queries: the stack must not be taken apart under the frame Serve
// is delivering.
func TestCloseWhileServing(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			for range 20 {
				tn := newTestNet(t, netOptions{framing: f})
				frame := dnsFrame(t, "flood.test.")
				stop := make(chan struct{})
				flooding := make(chan struct{})
				go func() {
					defer close(flooding)
					for {
						select {
						case <-stop:
							return
						default:
						}
						if tn.guest.writeFrame(frame) != nil {
							return
						}
					}
				}()
				tn.Close()
				close(stop)
				recv(t, flooding, "the flood stopping")
			}
		})
	}
}

// TestGuestNotReading: a guest that stops taking frames makes the
// network drop what it sends (TxDropped), as a full NIC ring would,
// while it goes on reading the guest's frames; Close still ends it.
func TestGuestNotReading(t *testing.T) {
	for _, f := range []Framing{Stream, Datagram} {
		t.Run(f.String(), func(t *testing.T) {
			checkGoroutines(t)
			n, err := New(Config{Decide: testPolicy, GuestMAC: testGuestMAC})
			if err != nil {
				t.Fatal(err)
			}
			host, guest := socketPair(t, f)
			defer guest.Close()
			// Small buffers, so they fill after a few frames.
			host.(*net.UnixConn).SetWriteBuffer(4096)
			guest.(*net.UnixConn).SetReadBuffer(4096)
			served := make(chan error, 1)
			go func() { served <- n.Serve(context.Background(), host, f) }()
			// A raw guest: it asks for the gateway's MAC, so the gateway
			// learns its own, then sends queries and reads nothing.
			g := &testGuest{t: t, conn: guest, framing: f}
			arp := ethFrame(broadcastMAC, testGuestMAC, header.ARPProtocolNumber, arpPacket(header.ARPRequest, testGuestMAC, GuestIP, GatewayIP))
			if err := g.writeFrame(arp); err != nil {
				t.Fatal(err)
			}
			query := dnsFrame(t, "unread.test.")
			st := n.Stats()
			deadline := time.Now().Add(wait)
			for st.TxDropped.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("after %d queries (%d replies sent) nothing was dropped", st.RxFrames.Load(), st.TxFrames.Load())
				}
				for range 256 {
					if err := g.writeFrame(query); err != nil {
						t.Fatalf("write: %v", err)
					}
				}
			}
			if err := n.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := recv(t, served, "Serve ending at Close"); err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}

// TestServeEndsWhenDatagramPeerGoes: a datagram socket never reads its
// peer's close, but the next frame the network sends to a VM that has
// gone fails, and that ends the link instead of leaving Serve reading
// for ever with a write side that is dead.
func TestServeEndsWhenDatagramPeerGoes(t *testing.T) {
	tn := newTestNet(t, netOptions{framing: Datagram})
	tn.guest.close()
	// Something for the network to send: a connection to the guest.
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan struct{})
	go func() {
		defer close(dialed)
		if c, err := tn.DialGuest(ctx, 22); err == nil {
			c.Close()
		}
	}()
	if err := tn.served(t, "Serve ending after a send to a VM that has gone"); err != nil {
		t.Errorf("Serve: %v, want nil (the VM going is the link's normal end)", err)
	}
	cancel()
	recv(t, dialed, "the dial to the guest ending")
}

// busyConn is a datagram socket whose sends fail as macOS's do when the
// socket's buffer is full (ENOBUFS, where Linux would block) a number of
// times before they go through, and fail for good past a size.
type busyConn struct {
	net.Conn
	busy    int // sends to refuse with ENOBUFS before taking any
	maxSize int
	sent    chan []byte
}

func (c *busyConn) Write(b []byte) (int, error) {
	if c.busy > 0 {
		c.busy--
		return 0, &net.OpError{Op: "write", Net: "unixgram", Err: os.NewSyscallError("sendto", syscall.ENOBUFS)}
	}
	if len(b) > c.maxSize {
		return 0, &net.OpError{Op: "write", Net: "unixgram", Err: os.NewSyscallError("sendto", syscall.EMSGSIZE)}
	}
	c.sent <- append([]byte(nil), b...)
	return len(b), nil
}

func (c *busyConn) Close() error { return nil }

// TestDatagramWriteBusy: a full socket buffer is waited out, frame by
// frame in order, and a frame the socket can never take is dropped, not
// the link.
func TestDatagramWriteBusy(t *testing.T) {
	conn := &busyConn{busy: 5, maxSize: 1500, sent: make(chan []byte, 16)}
	var stats Stats
	l := newFrameIO(conn, Datagram, DefaultMTU, tcpip.LinkAddress(testGatewayMAC), tcpip.LinkAddress(testGuestMAC), &stats)
	done := make(chan error, 1)
	go func() { done <- l.writeLoop() }()
	frames := [][]byte{randomBytes(100, 1), randomBytes(4000, 2), randomBytes(1500, 3)}
	for _, f := range frames {
		l.queued.Add(int64(len(f)))
		l.queue <- f
	}
	for _, want := range [][]byte{frames[0], frames[2]} {
		got := recv(t, conn.sent, "a frame sent")
		if string(got) != string(want) {
			t.Errorf("sent a frame of %d bytes, want the one of %d", len(got), len(want))
		}
	}
	l.close()
	if err := recv(t, done, "writeLoop ending"); err != nil {
		t.Errorf("writeLoop: %v", err)
	}
	if stats.TxFrames.Load() != 2 || stats.TxDropped.Load() != 1 {
		t.Errorf("TxFrames %d, TxDropped %d; want 2 and 1", stats.TxFrames.Load(), stats.TxDropped.Load())
	}
}
