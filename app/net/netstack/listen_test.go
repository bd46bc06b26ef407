package netstack

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestListenBounded: the gateway's services (the credential broker) are
// reached without the forwarder, so the guest could open connections to
// them without end, each a goroutine, buffers and, for the broker, a
// request to the model API on the host. Past MaxConns at once a new one
// is closed as soon as it is accepted; once one ends, another is served.
func TestListenBounded(t *testing.T) {
	const max = 3
	tn := newTestNet(t, netOptions{cfg: Config{MaxConns: max}})
	ln, err := tn.Listen(8080)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan net.Conn, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served <- c
			wg.Go(func() { io.Copy(io.Discard, c); c.Close() })
		}
	})

	var guests []net.Conn
	defer func() {
		for _, c := range guests {
			c.Close()
		}
	}()
	for i := range max + 2 {
		c, err := tn.guest.dialTCP(dialCtx(t), GatewayIP, 8080)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		guests = append(guests, c)
	}
	for i := range max {
		recv(t, served, "the service taking connection "+string(rune('1'+i)))
	}
	select {
	case <-served:
		t.Fatalf("the service took a connection past MaxConns %d", max)
	case <-time.After(300 * time.Millisecond):
	}
	// The ones past the bound were closed: the guest reads their end.
	// Which ones they are is the accept order, not the dial order (the
	// stack may finish the handshakes in another order): max stay open,
	// the rest end.
	ended := make(chan int, len(guests))
	for i, c := range guests {
		c.SetReadDeadline(time.Now().Add(wait))
		wg.Go(func() {
			if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
				ended <- i
			}
		})
	}
	gone := map[int]bool{}
	for len(gone) < len(guests)-max {
		select {
		case i := <-ended:
			gone[i] = true
		case <-time.After(wait):
			t.Fatalf("%d of %d connections past the bound ended, want %d", len(gone), len(guests), len(guests)-max)
		}
	}
	select {
	case i := <-ended:
		t.Fatalf("connection %d ended too: only %d were past the bound", i+1, len(guests)-max)
	case <-time.After(300 * time.Millisecond):
	}
	open := -1
	for i, c := range guests {
		c.SetReadDeadline(time.Now()) // the reads still waiting end
		if !gone[i] && open < 0 {
			open = i
		}
	}
	guests[open].Close()
	deadline := time.Now().Add(wait)
	for {
		c, err := tn.guest.dialTCP(dialCtx(t), GatewayIP, 8080)
		if err != nil {
			t.Fatal(err)
		}
		guests = append(guests, c)
		select {
		case <-served:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection was served after one ended")
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
