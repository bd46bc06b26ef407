// Package proxytest runs small proxies on the host's loopback for tests:
// an HTTP CONNECT proxy that logs each tunnel it is asked for and can be
// told to refuse, and a SOCKS5 proxy. They are real servers speaking the
// real protocols; they only ever dial what they are asked to, so a test
// that asks for loopback addresses reaches nothing else.
package proxytest

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Connect is an HTTP proxy on 127.0.0.1: CONNECT tunnels, and plain-http
// requests in absolute form forwarded as a forward proxy does.
type Connect struct {
	// URL is the proxy's address, http://127.0.0.1:PORT.
	URL *url.URL
	// Auth, when set before use, is the user:password the proxy asks for
	// (407 without it).
	Auth string

	ln     net.Listener
	refuse atomic.Int32
	mu     sync.Mutex
	log    []string
	gets   []string
	bytes  atomic.Int64
	wg     sync.WaitGroup
}

// NewConnect starts a CONNECT proxy; it stops when the test ends.
func NewConnect(tb testing.TB) *Connect {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Connect{URL: &url.URL{Scheme: "http", Host: ln.Addr().String()}, ln: ln}
	p.wg.Go(p.serve)
	tb.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// Refuse makes the proxy answer every CONNECT from now on with status
// (403, say); 0 lets them through again. A refused CONNECT is logged too.
func (p *Connect) Refuse(status int) { p.refuse.Store(int32(status)) }

// Connects are the targets of every CONNECT the proxy was asked for, in
// order.
func (p *Connect) Connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// Requests are the URLs of every plain-http request forwarded, in order.
func (p *Connect) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.gets...)
}

// Bytes counts what the proxy carried from the far ends to its clients.
func (p *Connect) Bytes() int64 { return p.bytes.Load() }

func (p *Connect) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.handle(c) })
	}
}

func (p *Connect) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		p.forward(c, req)
		return
	}
	target := req.Host
	p.mu.Lock()
	p.log = append(p.log, target)
	p.mu.Unlock()
	if p.Auth != "" && req.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(p.Auth)) {
		fmt.Fprint(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if code := int(p.refuse.Load()); code != 0 {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", code, http.StatusText(code))
		return
	}
	far, err := net.Dial("tcp", target)
	if err != nil {
		fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer far.Close()
	if _, err := fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	splice(c, br, far, &p.bytes)
}

// forward passes one plain-http request on and its answer back.
func (p *Connect) forward(c net.Conn, req *http.Request) {
	if !req.URL.IsAbs() || req.URL.Scheme != "http" {
		fmt.Fprint(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.mu.Lock()
	p.gets = append(p.gets, req.URL.String())
	p.mu.Unlock()
	if code := int(p.refuse.Load()); code != 0 {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", code, http.StatusText(code))
		return
	}
	req.RequestURI = ""
	req.Header.Del("Proxy-Authorization")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer resp.Body.Close()
	resp.Close = true
	resp.Write(c)
}

// splice copies both ways; client's reader may hold bytes already read.
func splice(client net.Conn, clientR io.Reader, far net.Conn, counted *atomic.Int64) {
	done := make(chan struct{})
	go func() {
		io.Copy(far, clientR)
		if cw, ok := far.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		close(done)
	}()
	n, _ := io.Copy(client, far)
	counted.Add(n)
	if cw, ok := client.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	<-done
}
