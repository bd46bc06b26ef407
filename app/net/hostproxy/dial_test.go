package hostproxy_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hostproxy/proxytest"
)

// echoServer answers each connection with a greeting and then echoes.
func echoServer(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "hello\n")
				io.Copy(c, c)
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

var direct = (&net.Dialer{}).DialContext

func config(t *testing.T, vars map[string]string) *hostproxy.Config {
	t.Helper()
	c, err := hostproxy.FromEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// talk checks the tunnel reaches the echo server: its greeting (which may
// arrive with the proxy's answer) and an echo.
func talk(t *testing.T, c net.Conn) {
	t.Helper()
	defer c.Close()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("greeting through the proxy: %q, %v", buf, err)
	}
	io.WriteString(c, "ping")
	if _, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("echo through the proxy: %q, %v", buf[:4], err)
	}
}

func TestDialConnect(t *testing.T) {
	ctx := context.Background()
	target := echoServer(t)
	p := proxytest.NewConnect(t)
	p.Auth = "me:pa ss"
	u := *p.URL
	u.User = url.UserPassword("me", "pa ss")
	c := config(t, map[string]string{"HTTPS_PROXY": u.String(), "NO_PROXY": ""})
	conn, err := c.DialTCP(ctx, direct, "echo.test", target)
	if err != nil {
		t.Fatal(err)
	}
	talk(t, conn)
	if got := p.Connects(); len(got) != 1 || got[0] != target.String() {
		t.Errorf("the proxy saw %q, want one CONNECT %s (by address)", got, target)
	}

	// A wrong password: the proxy's 407 is its refusal.
	bad := config(t, map[string]string{"HTTPS_PROXY": p.URL.String(), "NO_PROXY": ""})
	_, err = bad.DialTCP(ctx, direct, "echo.test", target)
	var ref *hostproxy.RefusedError
	if !errors.As(err, &ref) || ref.Answer != "407 Proxy Authentication Required" {
		t.Errorf("without the password: %v, want a RefusedError with 407", err)
	}

	// Told to refuse: 403, said as the proxy said it.
	p.Refuse(http.StatusForbidden)
	_, err = c.DialTCP(ctx, direct, "echo.test", target)
	if !errors.As(err, &ref) || ref.Answer != "403 Forbidden" || !strings.HasPrefix(err.Error(), "proxy refused: 403 Forbidden") {
		t.Errorf("refused: %v, want proxy refused: 403 Forbidden", err)
	}
	n := len(p.Connects())

	// NO_PROXY exempts by name or address: no CONNECT.
	exempt := config(t, map[string]string{"HTTPS_PROXY": p.URL.String(), "NO_PROXY": "echo.test"})
	conn, err = exempt.DialTCP(ctx, direct, "echo.test", target)
	if err != nil {
		t.Fatal(err)
	}
	talk(t, conn)
	if got := p.Connects(); len(got) != n {
		t.Errorf("a NO_PROXY name went to the proxy: %q", got[n:])
	}

	// No proxy answering: an error that names it, not a refusal.
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	gone := ln.Addr().String()
	ln.Close()
	none := config(t, map[string]string{"HTTPS_PROXY": "http://" + gone, "NO_PROXY": ""})
	_, err = none.DialTCP(ctx, direct, "", target)
	if err == nil || errors.As(err, &ref) || !strings.Contains(err.Error(), "reach the proxy "+gone) {
		t.Errorf("proxy down: %v", err)
	}

	// A context that ends while the proxy says nothing ends the dial.
	mute, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer mute.Close()
	go func() {
		c, err := mute.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	cctx, cancel := context.WithCancel(ctx)
	silent := config(t, map[string]string{"HTTPS_PROXY": "http://" + mute.Addr().String(), "NO_PROXY": ""})
	done := make(chan error, 1)
	go func() { _, err := silent.DialTCP(cctx, direct, "", target); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a silent proxy after cancel: %v, want context.Canceled", err)
	}
}

func TestDialSOCKS5(t *testing.T) {
	ctx := context.Background()
	target := echoServer(t)
	p := proxytest.NewSOCKS5(t)
	p.User, p.Password = "me", "secret"
	u := *p.URL
	u.User = url.UserPassword("me", "secret")
	for _, scheme := range []string{"socks5", "socks5h"} {
		u.Scheme = scheme
		c := config(t, map[string]string{"ALL_PROXY": u.String(), "NO_PROXY": ""})
		conn, err := c.DialTCP(ctx, direct, "echo.test", target)
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		talk(t, conn)
	}
	if got := p.Connects(); len(got) != 2 || got[0] != target.String() {
		t.Errorf("the SOCKS5 proxy saw %q, want two CONNECTs to %s", got, target)
	}

	var ref *hostproxy.RefusedError
	wrong := *p.URL
	wrong.User = url.UserPassword("me", "wrong")
	c := config(t, map[string]string{"ALL_PROXY": wrong.String(), "NO_PROXY": ""})
	if _, err := c.DialTCP(ctx, direct, "", target); !errors.As(err, &ref) || !strings.Contains(ref.Answer, "authentication failed") {
		t.Errorf("wrong password: %v, want a refusal", err)
	}

	deny := proxytest.NewSOCKS5(t)
	deny.Deny = true
	c = config(t, map[string]string{"ALL_PROXY": deny.URL.String(), "NO_PROXY": ""})
	if _, err := c.DialTCP(ctx, direct, "", target); !errors.As(err, &ref) || ref.Answer != "connection not allowed by ruleset" {
		t.Errorf("a SOCKS5 refusal: %v, want connection not allowed by ruleset", err)
	}
}

// TestHTTPProxy: an http.Transport with the configuration's Proxy reaches
// an HTTPS server through CONNECT, and an exempt one directly.
func TestHTTPProxy(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	p := proxytest.NewConnect(t)
	for _, tc := range []struct {
		noProxy string
		via     bool
	}{{"", true}, {"127.0.0.1", false}} {
		c := config(t, map[string]string{"HTTPS_PROXY": p.URL.String(), "NO_PROXY": tc.noProxy})
		tr := &http.Transport{Proxy: c.HTTPProxy, TLSClientConfig: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
		before := len(p.Connects())
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if string(b) != "ok" {
			t.Errorf("body %q", b)
		}
		if via := len(p.Connects()) > before; via != tc.via {
			t.Errorf("NO_PROXY=%q: through the proxy %v, want %v", tc.noProxy, via, tc.via)
		}
	}
}
