package proxytest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// SOCKS5 is a SOCKS5 proxy on 127.0.0.1 (RFC 1928, CONNECT only; RFC
// 1929 user and password when User is set).
type SOCKS5 struct {
	// URL is socks5://127.0.0.1:PORT.
	URL *url.URL
	// User and Password, when set before use, are required.
	User, Password string
	// Deny, when set before use, refuses every CONNECT with reply 2
	// ("connection not allowed by ruleset").
	Deny bool

	ln    net.Listener
	mu    sync.Mutex
	log   []string
	bytes atomic.Int64
	wg    sync.WaitGroup
}

// NewSOCKS5 starts a SOCKS5 proxy; it stops when the test ends.
func NewSOCKS5(tb testing.TB) *SOCKS5 {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &SOCKS5{URL: &url.URL{Scheme: "socks5", Host: ln.Addr().String()}, ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.handle(c) })
		}
	})
	tb.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// Connects are the targets of every CONNECT asked for, in order.
func (p *SOCKS5) Connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *SOCKS5) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(br, hdr); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	want := byte(0)
	if p.User != "" {
		want = 2
	}
	found := false
	for _, m := range methods {
		found = found || m == want
	}
	if !found {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, want})
	if want == 2 {
		var ver [1]byte
		if _, err := io.ReadFull(br, ver[:]); err != nil {
			return
		}
		user, pass := readShort(br), readShort(br)
		if user != p.User || pass != p.Password {
			c.Write([]byte{1, 1})
			return
		}
		c.Write([]byte{1, 0})
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(br, req); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1:
		a := make([]byte, 4)
		io.ReadFull(br, a)
		host = net.IP(a).String()
	case 3:
		host = readShort(br)
	case 4:
		a := make([]byte, 16)
		io.ReadFull(br, a)
		host = net.IP(a).String()
	default:
		return
	}
	var port [2]byte
	if _, err := io.ReadFull(br, port[:]); err != nil {
		return
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:]))))
	p.mu.Lock()
	p.log = append(p.log, target)
	p.mu.Unlock()
	reply := func(code byte) { c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }
	if p.Deny {
		reply(2)
		return
	}
	far, err := net.Dial("tcp", target)
	if err != nil {
		reply(5)
		return
	}
	defer far.Close()
	reply(0)
	splice(c, br, far, &p.bytes)
}

// readShort reads a length-prefixed string (one byte of length).
func readShort(r io.Reader) string {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return ""
	}
	b := make([]byte, n[0])
	io.ReadFull(r, b)
	return string(b)
}
