package broker_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandbar/app/net/broker"
)

const (
	realGitHub = "ghp_REALGITHUBTOKEN0123456789abcdefghijkl"
	realNPM    = "npm_REALNPMTOKEN0123456789abcdefghijklmn"
)

// intercepted is an Interceptor serving a loopback listener, in front of a
// TLS upstream whose certificate comes from a CA of its own (the real
// world's, as far as the test goes).
type intercepted struct {
	host     string
	addr     string         // where the guest connects
	guestCAs *x509.CertPool // what the guest trusts: Sandbar's CA only
	caPEM    []byte
	errs     chan error // what each Serve returned
	infos    chan broker.RequestInfo
}

func intercept(t *testing.T, host string, upstream http.Handler, creds []broker.Credential) *intercepted {
	t.Helper()
	ctx := context.Background()
	world, err := broker.LoadOrCreateCA(ctx, newMemStore())
	if err != nil {
		t.Fatal(err)
	}
	upCert, err := world.Certificate(host)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewUnstartedServer(upstream)
	up.TLS = &tls.Config{Certificates: []tls.Certificate{*upCert}}
	up.StartTLS()
	t.Cleanup(up.Close)
	upRoots := x509.NewCertPool()
	upRoots.AppendCertsFromPEM(world.CertPEM())

	ca, err := broker.LoadOrCreateCA(ctx, newMemStore())
	if err != nil {
		t.Fatal(err)
	}
	guestCAs := x509.NewCertPool()
	guestCAs.AppendCertsFromPEM(ca.CertPEM())
	ic := &intercepted{host: host, guestCAs: guestCAs, caPEM: ca.CertPEM(),
		errs: make(chan error, 64), infos: make(chan broker.RequestInfo, 64)}
	i := &broker.Interceptor{
		CA:          ca,
		Credentials: creds,
		RootCAs:     upRoots,
		OnRequest:   func(info broker.RequestInfo) { ic.infos <- info },
	}
	target := broker.Target{Host: host, Port: 443, Dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", up.Listener.Addr().String())
	}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ic.addr = ln.Addr().String()
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { ic.errs <- i.Serve(sctx, c, target) })
		}
	})
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	return ic
}

// client is the guest's HTTPS client: it trusts Sandbar's CA only, and
// every connection it makes lands on the interceptor.
func (ic *intercepted) client(t *testing.T) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:       &tls.Config{RootCAs: ic.guestCAs},
		ExpectContinueTimeout: 5 * time.Second,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ic.addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestInterceptorSwapsBoundCredential(t *testing.T) {
	gh := credential(t, "GITHUB_TOKEN", "github.test", "Authorization", realGitHub)
	npm := credential(t, "NPM_TOKEN", "npm.test", "Authorization", realNPM)
	seen := make(chan string, 8)
	ic := intercept(t, "github.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		seen <- auth
		w.Header().Set("X-Echo-Authorization", auth)
		fmt.Fprintf(w, "you sent %s\n", auth)
	}), []broker.Credential{gh, npm})
	client := ic.client(t)

	cases := []struct{ name, send, want string }{
		{"token", "token " + gh.Sentinel, "token " + realGitHub},
		{"basic", basicAuth("x-access-token", gh.Sentinel), basicAuth("x-access-token", realGitHub)},
		{"bound to another host", "token " + npm.Sentinel, "token " + npm.Sentinel},
		{"basic, bound to another host", basicAuth("u", npm.Sentinel), basicAuth("u", npm.Sentinel)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "https://github.test/user/repo.git/info/refs?service=git-upload-pack", nil)
			req.Header.Set("Authorization", tc.send)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := <-seen; got != tc.want {
				t.Errorf("upstream got %q, want %q", got, tc.want)
			}
			var all strings.Builder
			resp.Header.Write(&all)
			all.Write(body)
			for _, real := range []string{realGitHub, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + realGitHub))} {
				if strings.Contains(all.String(), real) {
					t.Fatalf("the guest got a real value:\n%s", all.String())
				}
			}
			if got := resp.Header.Get("X-Echo-Authorization"); got != tc.send {
				t.Errorf("echoed header reached the guest as %q, want what it sent", got)
			}
			info := <-ic.infos
			if info.Host != "github.test" || info.Path != "/user/repo.git/info/refs" || info.Status != 200 {
				t.Errorf("RequestInfo %+v", info)
			}
		})
	}
}

func TestInterceptorRefusesWrongSNI(t *testing.T) {
	ic := intercept(t, "github.test", http.NotFoundHandler(), nil)
	for _, name := range []string{"evil.test", ""} {
		conn, err := tls.Dial("tcp", ic.addr, &tls.Config{ServerName: name, RootCAs: ic.guestCAs, InsecureSkipVerify: name == ""})
		if err == nil {
			conn.Close()
			t.Fatalf("handshake for %q succeeded", name)
		}
		select {
		case err := <-ic.errs:
			if err == nil || !strings.Contains(err.Error(), "asked for") {
				t.Errorf("Serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after a refused handshake")
		}
	}
}

func TestInterceptorRefusesOtherHostHeader(t *testing.T) {
	called := make(chan struct{}, 1)
	ic := intercept(t, "github.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called <- struct{}{}
	}), nil)
	req, _ := http.NewRequest("GET", "https://github.test/", nil)
	req.Host = "evil.test"
	resp, err := ic.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("status %d, want 421", resp.StatusCode)
	}
	select {
	case <-called:
		t.Error("the request reached the upstream")
	default:
	}
}

func TestInterceptorStreamsChunkedUpload(t *testing.T) {
	const size = 5 << 20
	const first = 1 << 20
	gh := credential(t, "GITHUB_TOKEN", "github.test", "Authorization", realGitHub)
	upstreamHasFirst := make(chan struct{})
	ic := intercept(t, "github.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token "+realGitHub {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if len(r.TransferEncoding) != 1 || r.TransferEncoding[0] != "chunked" {
			http.Error(w, fmt.Sprintf("transfer encoding %v", r.TransferEncoding), 400)
			return
		}
		h := sha256.New()
		if _, err := io.CopyN(h, r.Body, first); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		close(upstreamHasFirst)
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%d %x", first+n, h.Sum(nil))
	}), []broker.Credential{gh})

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*31 + i>>8)
	}
	sum := sha256.Sum256(data)
	pr, pw := io.Pipe()
	writeErr := make(chan error, 1)
	go func() {
		if _, err := pw.Write(data[:first]); err != nil {
			writeErr <- err
			return
		}
		select {
		case <-upstreamHasFirst:
		case <-time.After(10 * time.Second):
			pw.CloseWithError(fmt.Errorf("timed out"))
			writeErr <- fmt.Errorf("the upstream did not get the first MiB before the rest was sent: the interceptor buffers uploads")
			return
		}
		_, err := pw.Write(data[first:])
		pw.CloseWithError(err)
		writeErr <- err
	}()
	req, _ := http.NewRequest("POST", "https://github.test/user/repo.git/git-receive-pack", pr)
	req.Header.Set("Authorization", "token "+gh.Sentinel)
	req.Header.Set("Expect", "100-continue")
	resp, err := ic.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %s", size, hex.EncodeToString(sum[:])); string(body) != want {
		t.Errorf("upstream answered %q (status %d), want %q", body, resp.StatusCode, want)
	}
	if info := <-ic.infos; info.RequestBytes != size {
		t.Errorf("RequestInfo counts %d request bytes, want %d", info.RequestBytes, size)
	}
}

// An upstream that refuses a request with Expect: 100-continue gets no
// body, and neither does the guest have to send it.
func TestInterceptorExpectContinueRefused(t *testing.T) {
	ic := intercept(t, "github.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
	}), nil)
	var read atomic.Bool
	body := readFunc(func(p []byte) (int, error) {
		read.Store(true)
		return 0, io.EOF
	})
	req, _ := http.NewRequest("POST", "https://github.test/user/repo.git/git-receive-pack", io.NopCloser(body))
	req.ContentLength = 1 << 20
	req.Header.Set("Expect", "100-continue")
	resp, err := ic.client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
	if read.Load() {
		t.Errorf("the guest was asked for the body of a refused request")
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func TestInterceptorUpstreamDown(t *testing.T) {
	ctx := context.Background()
	ca, err := broker.LoadOrCreateCA(ctx, newMemStore())
	if err != nil {
		t.Fatal(err)
	}
	i := &broker.Interceptor{CA: ca}
	guest, host := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- i.Serve(ctx, host, broker.Target{Host: "github.test", Dial: func(ctx context.Context) (net.Conn, error) {
			return nil, fmt.Errorf("connect: connection refused")
		}})
	}()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext:     func(context.Context, string, string) (net.Conn, error) { return guest, nil },
	}
	resp, err := (&http.Client{Transport: tr}).Get("https://github.test/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || string(body) != "Sandbar could not reach https://github.test: connect: connection refused\n" {
		t.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	tr.CloseIdleConnections()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when the guest closed its connection")
	}
}
