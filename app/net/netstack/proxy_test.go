package netstack

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hostproxy/proxytest"
)

// proxyConfig is the host's proxy set to p, with NO_PROXY empty: the test
// servers are on loopback, which NO_PROXY's default would exempt.
func proxyConfig(t testing.TB, vars ...string) *hostproxy.Config {
	t.Helper()
	env := map[string]string{"NO_PROXY": ""}
	for i := 0; i+1 < len(vars); i += 2 {
		env[vars[i]] = vars[i+1]
	}
	c, err := hostproxy.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTCPThroughProxy: with the host's proxy set, an allowed connection
// goes through CONNECT to the address the policy approved; a denied one
// never reaches the proxy; one the proxy refuses reaches the guest as a
// refusal and is reported denied with the proxy's answer; a name in
// NO_PROXY goes directly; UDP goes directly.
func TestTCPThroughProxy(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	p := proxytest.NewConnect(t)
	port := hostServer(t, echo)
	tn.cfg.Proxy = proxyConfig(t, "HTTPS_PROXY", p.URL.String(), "NO_PROXY", "direct.test")
	target := "127.0.0.1:" + strconv.Itoa(int(port))

	c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "allowed.test"), port)
	if err != nil {
		t.Fatalf("dial allowed.test through the proxy: %v", err)
	}
	roundTrip(t, c, "through the proxy")
	c.Close()
	if at := tn.attempt(t); !at.Verdict.Allow || at.Err != nil {
		t.Errorf("attempt %+v, want allowed without error", at)
	}
	if got := p.Connects(); !slices.Equal(got, []string{target}) {
		t.Errorf("the proxy saw %q, want one CONNECT %s (the address the policy approved)", got, target)
	}
	if d := tn.dials(); !slices.Contains(d, "tcp "+p.URL.Host) || slices.Contains(d, "tcp "+target) {
		t.Errorf("the host dialed %q: want the proxy, never the destination itself", d)
	}

	// Denied by the policy: refused before anything is dialed.
	if _, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "denied.test"), port); !isRefused(err) {
		t.Errorf("denied.test: %v, want refused", err)
	}
	if at := tn.attempt(t); at.Verdict.Allow || at.Verdict.Proxy {
		t.Errorf("denied.test: %+v", at)
	}
	if got := p.Connects(); len(got) != 1 {
		t.Errorf("a denied connection reached the proxy: %q", got)
	}

	// In NO_PROXY: directly.
	c, err = tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "direct.test"), port)
	if err != nil {
		t.Fatalf("dial direct.test: %v", err)
	}
	roundTrip(t, c, "directly")
	c.Close()
	tn.attempt(t)
	if got := p.Connects(); len(got) != 1 || !slices.Contains(tn.dials(), "tcp "+target) {
		t.Errorf("direct.test (NO_PROXY): the proxy saw %q, the host dialed %q", got, tn.dials())
	}

	// The proxy refuses: the guest's dial is refused, the attempt is a
	// denial with the proxy's answer.
	p.Refuse(403)
	if _, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "allowed.test"), port); !isRefused(err) {
		t.Errorf("a connection the proxy refuses: %v, want refused", err)
	}
	at := tn.attempt(t)
	if at.Verdict.Allow || !at.Verdict.Proxy || at.Err != nil || !strings.HasPrefix(at.Verdict.Reason, "proxy refused: 403 Forbidden") {
		t.Errorf("attempt %+v: want denied, Proxy, reason proxy refused: 403 Forbidden", at)
	}
	if got := p.Connects(); len(got) != 2 {
		t.Errorf("the proxy saw %q, want the refused CONNECT second", got)
	}
}

// TestUDPNotProxied: UDP goes directly whatever proxy is set.
func TestUDPNotProxied(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	p := proxytest.NewConnect(t)
	tn.cfg.Proxy = proxyConfig(t, "ALL_PROXY", p.URL.String())
	port, got := udpEcho(t)
	c := tn.guest.dialUDP(tn.lookup(t, "allowed.test"), port)
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("datagram")); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got, "the datagram reaching the host"); m != "datagram" {
		t.Errorf("host got %q", m)
	}
	if len(p.Connects()) != 0 {
		t.Errorf("UDP went to the proxy: %q", p.Connects())
	}
}

// TestTCPThroughSOCKS5: the same through a SOCKS5 proxy.
func TestTCPThroughSOCKS5(t *testing.T) {
	tn := newTestNet(t, netOptions{})
	p := proxytest.NewSOCKS5(t)
	port := hostServer(t, echo)
	tn.cfg.Proxy = proxyConfig(t, "ALL_PROXY", p.URL.String())
	c, err := tn.guest.dialTCP(dialCtx(t), tn.lookup(t, "allowed.test"), port)
	if err != nil {
		t.Fatalf("dial through SOCKS5: %v", err)
	}
	roundTrip(t, c, "through socks")
	c.Close()
	if got := p.Connects(); !slices.Equal(got, []string{"127.0.0.1:" + strconv.Itoa(int(port))}) {
		t.Errorf("the SOCKS5 proxy saw %q", got)
	}
}

// proxyBenchSize is what each download of BenchmarkDownloadProxy moves.
const proxyBenchSize = 100 << 20

// BenchmarkDownloadProxy downloads 100 MiB from a host server to the
// guest through the stack, directly and through a CONNECT proxy on
// loopback, alternately in the same run, and reports both rates and
// their ratio (proxy/direct; the goal is at least 0.8). It never fails
// on time.
func BenchmarkDownloadProxy(b *testing.B) {
	tn := newTestNet(b, netOptions{})
	p := proxytest.NewConnect(b)
	port := hostServer(b, func(c net.Conn) {
		var size int64
		if err := binary.Read(c, binary.BigEndian, &size); err != nil {
			return
		}
		sendPattern(c, size)
	})
	direct := proxyConfig(b)
	via := proxyConfig(b, "HTTPS_PROXY", p.URL.String())
	download := func(cfg *hostproxy.Config) time.Duration {
		tn.cfg.Proxy = cfg
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		c, err := tn.guest.dialTCP(ctx, tn.lookup(b, "bench.test"), port)
		if err != nil {
			b.Fatalf("dial: %v", err)
		}
		defer c.Close()
		tn.attempt(b)
		start := time.Now()
		if err := binary.Write(c, binary.BigEndian, int64(proxyBenchSize)); err != nil {
			b.Fatal(err)
		}
		got, err := io.Copy(io.Discard, c)
		if err != nil && !errors.Is(err, io.EOF) || got != proxyBenchSize {
			b.Fatalf("read %d of %d bytes: %v", got, proxyBenchSize, err)
		}
		return time.Since(start)
	}
	download(direct) // warm up
	var dt, pt time.Duration
	for b.Loop() {
		dt += download(direct)
		pt += download(via)
	}
	if p.Bytes() < int64(b.N)*proxyBenchSize {
		b.Fatalf("the proxy carried %d bytes, want %d", p.Bytes(), int64(b.N)*proxyBenchSize)
	}
	direct_, proxied := float64(b.N)*proxyBenchSize/1e6/dt.Seconds(), float64(b.N)*proxyBenchSize/1e6/pt.Seconds()
	b.ReportMetric(direct_, "direct-MB/s")
	b.ReportMetric(proxied, "proxy-MB/s")
	b.ReportMetric(proxied/direct_, "proxy/direct")
}
