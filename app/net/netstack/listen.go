package netstack

import (
	"context"
	"fmt"
	"net"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// Listen serves a TCP port on the gateway's address: Sandbar's services
// inside the session's network (the credential broker). The connections
// its listeners hand out are bounded, MaxConns at once over all of them
// (apart from the forwarded ones): past it, a new one is closed as soon
// as it is accepted, as a guest that opens them without end would
// otherwise cost the host a goroutine and buffers each, and the broker a
// request to the model API.
func (n *Network) Listen(port uint16) (net.Listener, error) {
	ln, err := gonet.ListenTCP(n.stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(GatewayIP.As4()), Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		return nil, fmt.Errorf("netstack: listen on the gateway's port %d: %w", port, err)
	}
	n.mu.Lock()
	n.closers = append(n.closers, func() { ln.Close() })
	n.mu.Unlock()
	return &serviceListener{Listener: ln, slots: n.services}, nil
}

// serviceListener hands out a gateway service's connections while a slot
// is free, and closes the rest.
type serviceListener struct {
	net.Listener
	slots chan struct{}
}

func (l *serviceListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &serviceConn{Conn: c, slots: l.slots}, nil
		default:
			c.Close()
		}
	}
}

// serviceConn gives its slot back when it is closed.
type serviceConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *serviceConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// CloseWrite half-closes, as the connection it wraps can.
func (c *serviceConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// DialGuest opens a TCP connection to the guest's port, from the gateway.
func (n *Network) DialGuest(ctx context.Context, port uint16) (net.Conn, error) {
	return gonet.DialContextTCP(ctx, n.stack, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(GuestIP.As4()), Port: port}, ipv4.ProtocolNumber)
}
