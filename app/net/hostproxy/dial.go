package hostproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/proxy"
)

// RefusedError is a proxy's refusal of a tunnel it was asked for: a
// non-2xx answer to CONNECT, or a SOCKS5 reply other than success.
type RefusedError struct {
	Proxy  string // host:port of the proxy
	Target string // where the tunnel was to go
	// Answer is the proxy's answer as it gave it: "403 Forbidden", or
	// the SOCKS5 failure.
	Answer string
}

// RefusedPrefix begins a RefusedError's text, as the denied attempts
// keep it.
const RefusedPrefix = "proxy refused: "

func (e *RefusedError) Error() string {
	return RefusedPrefix + e.Answer + " (the proxy " + e.Proxy + ", for " + e.Target + ")"
}

// maxConnectReply bounds the proxy's answer to CONNECT (status line and
// headers).
const maxConnectReply = 64 << 10

// Dial opens a tunnel to target (host:port) through the proxy p, opening
// the connection to the proxy with direct.
func Dial(ctx context.Context, direct DialFunc, p *url.URL, target string) (net.Conn, error) {
	switch p.Scheme {
	case "http":
		return dialConnect(ctx, direct, p, target)
	case "socks5", "socks5h":
		return dialSOCKS5(ctx, direct, p, target)
	}
	return nil, &SettingError{Name: "the proxy", Value: p.Redacted(), What: "a proxy URL", Why: "scheme " + p.Scheme + " is none of http, socks5, socks5h", Give: "http://host:port or socks5://host:port"}
}

// dialConnect asks an HTTP proxy for a tunnel with CONNECT.
func dialConnect(ctx context.Context, direct DialFunc, p *url.URL, target string) (net.Conn, error) {
	addr := proxyAddr(p)
	c, err := direct(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("reach the proxy %s: %w", addr, err)
	}
	// The handshake is bounded by ctx: closing the connection ends a
	// read or write that waits.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	conn, err := connect(c, p, addr, target)
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return conn, nil
}

func connect(c net.Conn, p *url.URL, addr, target string) (net.Conn, error) {
	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Opaque: target},
		Host:   target,
		Header: http.Header{},
	}
	if u := p.User; u != nil {
		pass, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	if err := req.Write(c); err != nil {
		return nil, fmt.Errorf("ask the proxy %s for %s: %w", addr, target, err)
	}
	br := bufio.NewReaderSize(&limited{c, maxConnectReply}, 4096)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("the proxy %s answered CONNECT %s with no HTTP response: %w", addr, target, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &RefusedError{Proxy: addr, Target: target, Answer: strings.TrimSpace(resp.Status)}
	}
	if n := br.Buffered(); n > 0 {
		// The far end spoke first (a server banner), right behind the
		// proxy's answer: keep it.
		b, _ := br.Peek(n)
		return &bufferedConn{Conn: c, buf: append([]byte(nil), b...)}, nil
	}
	return c, nil
}

// limited reads at most n bytes of the proxy's answer; past it the proxy
// is talking nonsense.
type limited struct {
	c net.Conn
	n int
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("the proxy's answer to CONNECT is too long")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	k, err := l.c.Read(p)
	l.n -= k
	return k, err
}

// bufferedConn is a connection with bytes already read from it.
type bufferedConn struct {
	net.Conn
	buf []byte
}

func (b *bufferedConn) Read(p []byte) (int, error) {
	if len(b.buf) > 0 {
		n := copy(p, b.buf)
		b.buf = b.buf[n:]
		return n, nil
	}
	return b.Conn.Read(p)
}

// CloseWrite passes a half-close on, as the connection beneath does.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return b.Conn.Close()
}

// dialSOCKS5 opens the tunnel through a SOCKS5 proxy.
func dialSOCKS5(ctx context.Context, direct DialFunc, p *url.URL, target string) (net.Conn, error) {
	addr := proxyAddr(p)
	var auth *proxy.Auth
	if u := p.User; u != nil {
		pass, _ := u.Password()
		auth = &proxy.Auth{User: u.Username(), Password: pass}
	}
	d, err := proxy.SOCKS5("tcp", addr, auth, forward(direct))
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", p.Redacted(), err)
	}
	c, err := d.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
	if err != nil {
		if answer, ok := socksRefusal(err); ok && ctx.Err() == nil {
			return nil, &RefusedError{Proxy: addr, Target: target, Answer: answer}
		}
		return nil, fmt.Errorf("through the SOCKS5 proxy %s to %s: %w", addr, target, err)
	}
	return c, nil
}

// socksRefusal picks the proxy's own refusal out of x/net's SOCKS client
// errors, which carry it only in their text: a reply other than success
// ("unknown error connection not allowed by ruleset"), or a refused
// authentication.
func socksRefusal(err error) (string, bool) {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Err == nil {
		return "", false
	}
	msg := oe.Err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown error "):
		return strings.TrimPrefix(msg, "unknown error "), true
	case msg == "no acceptable authentication methods", msg == "username/password authentication failed":
		return msg, true
	}
	return "", false
}

// forward is direct as the x/net proxy package's dialer.
type forward DialFunc

func (f forward) Dial(network, address string) (net.Conn, error) {
	return f(context.Background(), network, address)
}

func (f forward) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return f(ctx, network, address)
}
