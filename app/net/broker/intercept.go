package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
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
}

const (
	handshakeTimeout = 10 * time.Second
	idleTimeout      = 5 * time.Minute
)

// Serve handles one guest connection until the guest closes it, it idles
// for 5 minutes, or ctx ends; it closes guest. A ClientHello naming another
// host than t.Host is refused (an alert, then close) and reported as an
// error; so is a handshake not done within 10 s. Only HTTP/1.1 is offered.
// Serve returns nil when the guest simply went away.
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

	tc := tls.Server(guest, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sni := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
			if sni != host && !(sni == "" && net.ParseIP(host) != nil) {
				return nil, fmt.Errorf("the guest asked for %q on a connection to %s", hello.ServerName, host)
			}
			return i.CA.Certificate(host)
		},
	})
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		return fmt.Errorf("TLS handshake with the guest for %s: %w", host, err)
	}

	port := t.Port
	if port == 0 {
		port = 443
	}
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if port != 443 {
		authority = net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	tr := &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return i.dialUpstream(ctx, t, host)
		},
		ResponseHeaderTimeout:  5 * time.Minute,
		ExpectContinueTimeout:  1 * time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: 1 << 20,
	}
	defer tr.CloseIdleConnections()
	fwd := newForwarder(&forwarder{
		host:      host,
		base:      &url.URL{Scheme: "https", Host: authority},
		checkHost: true,
		swap:      swap,
		scrub:     newScrubber(i.Credentials),
		onRequest: i.OnRequest,
		log:       logger,
		fail:      writeTextError,
	}, tr)
	return serveConn(ctx, tc, fwd, logger)
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
