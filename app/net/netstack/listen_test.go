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
	for _, c := range guests[max:] {
		c.SetReadDeadline(time.Now().Add(wait))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("a connection past the bound: read %v, want its end", err)
		}
	}
	guests[0].Close()
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
