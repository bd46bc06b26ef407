package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Interceptor terminates a guest's HTTPS connection to a host that a
// brokered secret is bound to, and forwards its requests to the real host
// with the secret swapped in. The guest trusts CA (Sandbar installs it in
// the guest); the upstream is verified against RootCAs.
//
// For each request, sentinels of the credentials bound to the target host
// are swapped in their Header (plus a "Basic" credential's base64 there);
// sentinels bound to other hosts, or in another header, go on unchanged and
// useless. Response headers are scrubbed of real values and bodies masked,
// as for the API broker. Bodies stream both ways, Expect: 100-continue and
// chunked uploads included.
type Interceptor struct {
	CA          *CA
	Credentials []Credential
	// RootCAs verifies upstreams; nil means the system's roots.
	RootCAs   *x509.CertPool
	OnRequest func(RequestInfo) // as APIConfig.OnRequest
	Logger    *slog.Logger      // default: discard
}

// Target is where an intercepted connection was going.
type Target struct {
	Host string // the name the guest resolved and must ask for (SNI)
	Port uint16 // the port it dialled; 0 means 443
	// Dial reaches the real upstream: the network has already approved and
	// resolved it.
	Dial func(ctx context.Context) (net.Conn, error)
	// ReadOnly lets only reads through (IsRead): any other request is
	// answered 403 and goes no further. A read-only connection may also
	// speak plain HTTP (an archive on port 80); its requests then carry no
	// brokered secret.
	ReadOnly bool
	// HowToAllow ends a refused write's 403: how the person allows writes
	// ("sandbar net ID allow HOST write").
	HowToAllow string
	// OnRefused, if set, hears each refused write.
	OnRefused func(RequestInfo)
}

const (
	handshakeTimeout = 10 * time.Second
	// firstByteTimeout bounds the wait for what the guest sends first, and
	// guestHandshakeTimeout its TLS handshake after that. They are long
	// because a client may connect before it reads its CA bundle (curl
	// with GnuTLS does), which under software emulation takes seconds.
	firstByteTimeout      = time.Minute
	guestHandshakeTimeout = 30 * time.Second
	idleTimeout           = 5 * time.Minute
)

// Serve handles one guest connection until the guest closes it, it idles
// for 5 minutes, or ctx ends; it closes guest. A ClientHello naming another
// host than t.Host is refused (an alert, then close) and reported as an
// error; so is a guest that sends nothing for a minute, or whose
// handshake is not done 30 s after that. Only HTTP/1.1 is offered to the
// guest (see guestALPN); the upstream is spoken to in HTTP/1.1. A
// connection that does not start with a TLS handshake is served as plain
// HTTP when t.ReadOnly, and refused otherwise. Serve returns nil when the
// guest simply went away.
func (i *Interceptor) Serve(ctx context.Context, guest net.Conn, t Target) error {
	defer guest.Close()
	host := strings.ToLower(strings.TrimSuffix(t.Host, "."))
	if i.CA == nil || host == "" || t.Dial == nil {
		return errors.New("interceptor: a CA, a target host and a way to dial it are needed")
	}
	swap, err := newSwapper(i.Credentials, host, false, false)
	if err != nil {
		return err
	}
	logger := i.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("host", host)
	port := t.Port
	if port == 0 {
		port = 443
	}

	guest.SetReadDeadline(time.Now().Add(firstByteTimeout))
	conn, isTLS, err := sniff(guest)
	guest.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("read the first bytes the guest sent to %s: %w", host, err)
	case !isTLS && !t.ReadOnly:
		return fmt.Errorf("the guest spoke plain text to %s:%d, where Sandbar brokers a secret over HTTPS only", host, port)
	case !isTLS:
		// No secret goes over plain HTTP: every sentinel passes unchanged.
		for k := range swap.bound {
			swap.elsewhere[k] = true
		}
		clear(swap.bound)
		tr := i.transport(func(ctx context.Context, _, _ string) (net.Conn, error) { return t.Dial(ctx) }, nil)
		defer tr.CloseIdleConnections()
		fwd := i.forwarder(t, host, &url.URL{Scheme: "http", Host: authority(host, port, 80)}, swap, logger, tr)
		return serveConn(ctx, conn, fwd, logger)
	}

	tc := tls.Server(conn, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: guestALPN(),
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sni := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
			if sni != host && !(sni == "" && net.ParseIP(host) != nil) {
				return nil, fmt.Errorf("the guest asked for %q on a connection to %s", hello.ServerName, host)
			}
			return i.CA.Certificate(host)
		},
	})
	hctx, cancel := context.WithTimeout(ctx, guestHandshakeTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		return fmt.Errorf("TLS handshake with the guest for %s: %w", host, err)
	}
	tr := i.transport(nil, func(ctx context.Context, _, _ string) (net.Conn, error) {
		return i.dialUpstream(ctx, t, host)
	})
	defer tr.CloseIdleConnections()
	fwd := i.forwarder(t, host, &url.URL{Scheme: "https", Host: authority(host, port, 443)}, swap, logger, tr)
	return serveConn(ctx, tc, fwd, logger)
}

// guestALPN is what the interceptor offers the guest. Not HTTP/2: the
// guest's curl (Debian bookworm's 7.88, which git uses) stalls mid-upload
// over HTTP/2 against Go's server now and then (a 3 MiB git push hung in 1
// of ~30 runs, both ends waiting for the other), and HTTP/1.1 never did
// in 60. An upload that hangs for ever is worse than a download that
// multiplexes less.
func guestALPN() []string { return []string{"http/1.1"} }

// authority is host[:port] for a URL, the port left out when it is the
// scheme's own.
func authority(host string, port, schemePort uint16) string {
	if port != schemePort {
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// transport reaches one upstream, by dial (plain) or dialTLS.
func (i *Interceptor) transport(dial, dialTLS func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		DialContext:            dial,
		DialTLSContext:         dialTLS,
		ResponseHeaderTimeout:  5 * time.Minute,
		ExpectContinueTimeout:  1 * time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

func (i *Interceptor) forwarder(t Target, host string, base *url.URL, swap *swapper, logger *slog.Logger, tr http.RoundTripper) *forwarder {
	return newForwarder(&forwarder{
		host:       host,
		base:       base,
		checkHost:  true,
		swap:       swap,
		scrub:      newScrubber(i.Credentials),
		onRequest:  i.OnRequest,
		log:        logger,
		fail:       writeTextError,
		readOnly:   t.ReadOnly,
		howToAllow: t.HowToAllow,
		onRefused:  t.OnRefused,
	}, tr)
}

// dialUpstream opens a verified TLS connection to the real host.
func (i *Interceptor) dialUpstream(ctx context.Context, t Target, host string) (net.Conn, error) {
	raw, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, &tls.Config{
		ServerName: host,
		RootCAs:    i.RootCAs,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", host, err)
	}
	return tc, nil
}

// serveConn runs an http.Server over the one connection c and returns once
// the connection is closed and its handler done.
func serveConn(ctx context.Context, c net.Conn, h http.Handler, logger *slog.Logger) error {
	ln := &oneConnListener{conn: c, closed: make(chan struct{})}
	connDone := make(chan struct{})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       idleTimeout,
		ErrorLog:          newErrorLog(logger),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, s http.ConnState) {
			// StateClosed comes from the connection's goroutine as it
			// ends, after its last handler has returned.
			if s == http.StateClosed || s == http.StateHijacked {
				close(connDone)
				ln.Close()
			}
		},
	}
	stop := context.AfterFunc(ctx, func() {
		srv.Close()
		c.Close() // also if the server had not tracked it yet
	})
	defer stop()
	srv.Serve(ln) // returns once the listener is closed: by the connection's end, or by Close
	if ln.accepted() {
		<-connDone
	} else {
		c.Close() // ctx ended before the server started
	}
	return ctx.Err()
}

// oneConnListener hands out one connection, then waits until closed.
type oneConnListener struct {
	conn   net.Conn
	mu     sync.Mutex
	taken  bool
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	first := !l.taken
	l.taken = true
	l.mu.Unlock()
	if first {
		return l.conn, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

func (l *oneConnListener) accepted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.taken
}

// writeTextError writes the broker's own error as plain text: git and curl
// show it as it is.
func writeTextError(w http.ResponseWriter, status int, _ string, msg string) {
	h := w.Header()
	clear(h)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)+1))
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}
