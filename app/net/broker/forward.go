package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RequestInfo describes one brokered request, for the session log. It never
// holds a header value or a query string (either may carry a token).
type RequestInfo struct {
	Method string
	Host   string // the upstream host
	Path   string // the URL path, without the query
	// Status is the status the guest got: the upstream's, or the broker's
	// own (401, 421, 502, 504) when it answered itself.
	Status   int
	Duration time.Duration // from the request's arrival to the end of its response
	// RequestBytes and ResponseBytes count body bytes read from the guest
	// and written back to it.
	RequestBytes, ResponseBytes int64
	Brokered                    []string // names of the credentials swapped in
	// Refused says the request was a write to a read-only host, answered
	// 403 by the broker; What says what it was ("git push").
	Refused bool
	What    string
}

// forwarder is the core both front ends share: swap sentinels, forward to
// one upstream, scrub what comes back, report.
type forwarder struct {
	host      string   // the upstream host, for RequestInfo and host checks
	base      *url.URL // scheme://authority[/path] every request goes to
	checkHost bool     // refuse a request whose Host names another host (421)
	swap      *swapper
	scrub     *scrubber
	proxy     *httputil.ReverseProxy
	onRequest func(RequestInfo)
	log       *slog.Logger
	// fail writes the broker's own error response in the front end's shape.
	fail func(w http.ResponseWriter, status int, kind, msg string)
	// readOnly refuses requests that are not reads (IsRead), saying
	// howToAllow, and tells onRefused.
	readOnly   bool
	howToAllow string
	onRefused  func(RequestInfo)
}

func newForwarder(f *forwarder, transport http.RoundTripper) *forwarder {
	f.proxy = &httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		Transport:      transport,
		FlushInterval:  -1, // SSE events flow as they come
		ModifyResponse: f.modifyResponse,
		ErrorHandler:   f.upstreamError,
		ErrorLog:       slog.NewLogLogger(f.log.Handler(), slog.LevelDebug),
		BufferPool:     copyBuffers{},
	}
	return f
}

// copyBuffers are the buffers response bodies are copied through: larger
// than ReverseProxy's own 32 KiB, so a large download goes to the guest in
// fewer writes (each one a pass through the session's network stack).
type copyBuffers struct{}

var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func (copyBuffers) Get() []byte  { return *bodyBufs.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { bodyBufs.Put(&b) }

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(f.base) // the Host header becomes the upstream's
	// Ask for a plain body, so the scrubber can read it. An *http.Transport
	// then asks for gzip itself and undoes it: the upstream leg stays
	// compressed, the guest's in-memory leg is plain. With nothing to
	// scrub the guest's own ask goes on, and its bytes come back as sent.
	if len(f.scrub.patterns) > 0 {
		pr.Out.Header.Del("Accept-Encoding")
	}
	// No protocol upgrades: an upgraded stream would pass unscrubbed.
	pr.Out.Header.Del("Upgrade")
	pr.Out.Header.Del("Connection")
}

func (f *forwarder) modifyResponse(resp *http.Response) error {
	if resp.Body == nil || resp.Body == http.NoBody || len(f.scrub.patterns) == 0 {
		return nil
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		f.log.Debug("response body is encoded: passed without scrubbing", "upstream", f.host, "encoding", ce)
		return nil
	}
	resp.Body = newScrubReader(resp.Body, f.scrub)
	return nil
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, scrub: f.scrub}
	info := RequestInfo{Method: r.Method, Host: f.host, Path: r.URL.Path}
	var reqBytes atomic.Int64
	defer func() {
		// Runs on ReverseProxy's abort panic too; the panic goes on.
		if f.onRequest == nil {
			return
		}
		info.Status, info.ResponseBytes = rec.status, rec.bytes
		info.RequestBytes = reqBytes.Load()
		info.Duration = time.Since(start)
		f.onRequest(info)
	}()

	if f.checkHost && !sameHost(r.Host, f.host) {
		f.fail(rec, http.StatusMisdirectedRequest, "invalid_request_error",
			"This connection is to "+f.host+": Sandbar does not send requests for another host over it.")
		return
	}
	if f.readOnly {
		if ok, what := IsRead(r); !ok {
			info.Refused, info.What, info.Path = true, what, printable(r.URL.Path)
			refuseWrite(rec, f.host, what, r.Method, info.Path, f.howToAllow)
			if f.onRefused != nil {
				f.onRefused(RequestInfo{Method: printable(r.Method), Host: f.host, Path: info.Path, Status: http.StatusForbidden, Refused: true, What: what})
			}
			return
		}
	}
	h := r.Header.Clone()
	used, err := f.swap.swap(h)
	if err != nil {
		f.log.Warn("request carries an unknown Sandbar placeholder", "upstream", f.host, "path", r.URL.Path)
		f.fail(rec, http.StatusUnauthorized, "authentication_error",
			"The request carries a Sandbar credential placeholder (sandbar-brokered-...) that this session does not know. "+
				"Use the value Sandbar put in this session's environment, or start a new session.")
		return
	}
	info.Brokered = used
	out := r.WithContext(r.Context())
	out.Header = h
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = &countingReader{ReadCloser: r.Body, n: &reqBytes}
	}
	f.proxy.ServeHTTP(rec, out)
	// Trailers are set in the header map after the body; the server writes
	// them once the handler returns.
	f.scrub.header(w.Header())
}

func (f *forwarder) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	msg := f.scrub.text(cause.Error())
	if r.Context().Err() != nil {
		// The guest went away; nobody reads this answer.
		f.log.Debug("guest left before the upstream answered", "upstream", f.host, "path", r.URL.Path)
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	where := f.base.Scheme + "://" + f.base.Host
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		f.log.Warn("upstream did not answer in time", "upstream", f.host, "path", r.URL.Path, "err", msg)
		f.fail(w, http.StatusGatewayTimeout, "api_error", "Sandbar got no answer in time from "+where+": "+msg)
		return
	}
	f.log.Warn("upstream unreachable", "upstream", f.host, "path", r.URL.Path, "err", msg)
	f.fail(w, http.StatusBadGateway, "api_error", "Sandbar could not reach "+where+": "+msg)
}

// printable is guest text made fit for a message: at most 200 bytes,
// anything but printable ASCII as "?", so no terminal or log reads a
// control sequence from it.
func printable(s string) string {
	const max = 200
	b := []byte(s)
	if len(b) > max {
		b = append(b[:max:max], "..."...)
	}
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// sameHost reports whether the authority hostport names host.
func sameHost(hostport, host string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.EqualFold(h, host)
}

// recorder scrubs response headers (1xx, final and trailers) before they
// are written, and counts what goes to the guest. Flush reaches the
// server's writer through Unwrap (http.ResponseController).
type recorder struct {
	http.ResponseWriter
	scrub  *scrubber
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	w.scrub.header(w.ResponseWriter.Header())
	if code >= 200 && w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingReader counts the request body bytes read; the Transport may
// read from its own goroutine.
type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}
