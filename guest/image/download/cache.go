// Package download fetches files over HTTP into a local, content-addressed
// cache and checks each one against the hash its caller expects, so a
// corrupt mirror or proxy cannot slip a bad file into a guest image and a
// rebuild works offline once everything has been fetched.
//
// Files whose hash is known ahead (Debian packages, npm tarballs) are
// stored under Dir/<algo>/<hex> and never downloaded twice. Index files
// that change in place (Debian's Release) go through FetchMutable, which
// keeps the last good copy for when the network is gone.
//
// This package knows nothing of Debian or npm, does not verify signatures
// and does not resume partial downloads: a failed transfer starts over.
package download

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoNetwork is wrapped by errors returned when the server could not be
// reached at all (no route, DNS failure, connection refused).
var ErrNoNetwork = errors.New("no network")

// ErrChecksum is wrapped by errors returned when a downloaded file does not
// have the expected hash.
var ErrChecksum = errors.New("checksum mismatch")

// StatusError is returned when the server answers with an HTTP error.
type StatusError struct {
	URL    string
	Code   int
	Status string // e.g. "404 Not Found"
}

func (e *StatusError) Error() string {
	hint := "check the address, or retry later"
	switch {
	case e.Code == http.StatusNotFound || e.Code == http.StatusGone:
		hint = "the file is no longer on the server; refresh the index it came from and retry"
	case e.Code >= 500:
		hint = "the server has a problem; retry later"
	}
	return fmt.Sprintf("download %s: server answered %s: %s", e.URL, e.Status, hint)
}

// Progress tells how far one download is.
type Progress struct {
	URL   string
	Done  int64
	Total int64 // -1 if the server did not say
}

// Cache downloads files into Dir and hands out their local paths. Its zero
// value, with Dir set, is ready to use; it is safe for concurrent use and
// must not be copied after first use.
type Cache struct {
	// Dir holds the cache, e.g. <user cache dir>/sandbar/downloads.
	Dir string
	// Client makes the requests. Nil means a client that gives up
	// connecting after 15 s and waiting for headers after 30 s, but lets a
	// big body take as long as it needs while data keeps coming.
	Client *http.Client
	// Proxy is the default client's proxy: the host's proxy as the
	// engine was configured (hostproxy.Config.HTTPProxy). Nil connects
	// directly; the environment is not read here.
	Proxy func(*http.Request) (*url.URL, error)
	// Progress, when set, is called at most about ten times a second per
	// download and once when a download completes (then Done == Total).
	// It may be called from several goroutines at once.
	Progress func(Progress)
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// retryDelay is the wait before the first retry, doubled for the
	// next; zero means one second. Tests shorten it.
	retryDelay time.Duration
	// idleTimeout abandons an attempt whose body stalls this long; zero
	// means one minute.
	idleTimeout time.Duration

	once          sync.Once
	defaultClient *http.Client
}

// retries is how many times a transient failure is retried.
const retries = 2

// Path is where Fetch keeps the file with digest d.
func (c *Cache) Path(d Digest) string {
	return filepath.Join(c.Dir, d.Algo, d.Hex())
}

// Fetch returns the path of a local copy of url whose hash is want. A copy
// already in the cache is returned without touching the network, so an
// offline rebuild works. Otherwise the file is downloaded next to its final
// place, hashed as it is written, and moved into place only if the hash
// matches; nothing partial or corrupt is ever left in the cache.
func (c *Cache) Fetch(ctx context.Context, url string, want Digest) (string, error) {
	if err := want.validate(); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if c.Dir == "" {
		return "", fmt.Errorf("download %s: the download cache has no directory: set Cache.Dir", url)
	}
	final := c.Path(want)
	if fi, err := os.Stat(final); err == nil && fi.Mode().IsRegular() {
		c.logger().Debug("download cache hit", "url", url, "digest", want.short())
		return final, nil
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("download %s: create cache directory: %w: check that %s is writable", url, err, c.Dir)
	}
	h := newHash(want.Algo)
	tmp, err := c.download(ctx, url, dir, h)
	if err != nil {
		return "", err
	}
	got := Digest{Algo: want.Algo, Sum: h.Sum(nil)}
	if string(got.Sum) != string(want.Sum) {
		os.Remove(tmp)
		return "", fmt.Errorf("download %s: %w (want %s, got %s): the mirror or a proxy served a corrupt file; retry, or delete %s if it persists",
			url, ErrChecksum, want.short(), got.short(), c.Dir)
	}
	if err := commit(tmp, final); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	return final, nil
}

// FetchMutable downloads url, a file that changes in place on the server
// (an index), and keeps it as the cache's copy. When the network or the
// server fails, the last copy is returned instead, with fromCache true, so
// an offline rebuild still works; callers should check what it contains
// (its hashes, its dates) like any other download.
func (c *Cache) FetchMutable(ctx context.Context, url string) (path string, fromCache bool, err error) {
	if c.Dir == "" {
		return "", false, fmt.Errorf("download %s: the download cache has no directory: set Cache.Dir", url)
	}
	dir := filepath.Join(c.Dir, "mutable")
	final := filepath.Join(dir, sanitize(url))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("download %s: create cache directory: %w: check that %s is writable", url, err, c.Dir)
	}
	tmp, err := c.download(ctx, url, dir, nil)
	if err == nil {
		if err := commit(tmp, final); err != nil {
			return "", false, fmt.Errorf("download %s: %w", url, err)
		}
		return final, false, nil
	}
	var se *StatusError
	if ctx.Err() != nil || (errors.As(err, &se) && se.Code < 500) {
		// Cancelled, or the server says the file is not there: a stale
		// copy would hide the real problem.
		return "", false, err
	}
	if fi, serr := os.Stat(final); serr == nil && fi.Mode().IsRegular() {
		c.logger().Warn("download failed; using the cached copy", "url", url, "cached", fi.ModTime(), "err", err)
		return final, true, nil
	}
	return "", false, err
}

// download fetches url into a new temporary file in dir, retrying
// transient failures, and returns the file's path once it is complete and
// synced. h, when not nil, receives every byte of the final attempt.
func (c *Cache) download(ctx context.Context, url, dir string, h hash.Hash) (string, error) {
	f, err := os.CreateTemp(dir, ".partial-*")
	if err != nil {
		return "", fmt.Errorf("download %s: %w: check that %s is writable", url, err, c.Dir)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	delay := c.retryDelay
	if delay == 0 {
		delay = time.Second
	}
	for attempt := 0; ; attempt++ {
		err = c.attempt(ctx, url, f, h)
		if err == nil {
			break
		}
		if attempt == retries || !transient(err) || ctx.Err() != nil {
			return "", describe(url, err)
		}
		c.logger().Info("download failed; retrying", "url", url, "attempt", attempt+1, "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("download %s: %w", url, context.Cause(ctx))
		case <-t.C:
		}
		delay *= 2
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("download %s: write to disk: %w", url, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("download %s: write to disk: %w", url, err)
	}
	keep = true
	return f.Name(), nil
}

// errIdle cancels an attempt whose body stopped arriving.
var errIdle = errors.New("no data received for too long")

// attempt makes one request and writes its body to f from the start.
func (c *Cache) attempt(ctx context.Context, url string, f *os.File, h hash.Hash) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if h != nil {
		h.Reset()
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		return &permanentError{err}
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &StatusError{URL: url, Code: resp.StatusCode, Status: resp.Status}
	}
	idle := c.idleTimeout
	if idle == 0 {
		idle = time.Minute
	}
	timer := time.AfterFunc(idle, func() { cancel(errIdle) })
	defer timer.Stop()

	p := Progress{URL: url, Total: resp.ContentLength}
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	buf := make([]byte, 256<<10)
	var last time.Time
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			timer.Reset(idle)
			if _, err := w.Write(buf[:n]); err != nil {
				return &permanentError{fmt.Errorf("write to disk: %w", err)}
			}
			p.Done += int64(n)
			if c.Progress != nil && time.Since(last) >= 100*time.Millisecond {
				last = time.Now()
				c.Progress(p)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if errors.Is(context.Cause(actx), errIdle) {
				return fmt.Errorf("%w (%s)", errIdle, idle)
			}
			return rerr
		}
	}
	if p.Total >= 0 && p.Done != p.Total {
		return fmt.Errorf("got %d of %d bytes: %w", p.Done, p.Total, io.ErrUnexpectedEOF)
	}
	if c.Progress != nil {
		p.Total = p.Done
		c.Progress(p)
	}
	return nil
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// transient says whether err may go away if the request is made again.
func transient(err error) bool {
	var pe *permanentError
	if errors.As(err, &pe) {
		return false
	}
	if offline(err) {
		// Retrying cannot bring the network back in a few seconds, and
		// an offline rebuild should fall back to the cache at once.
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 || se.Code == http.StatusTooManyRequests || se.Code == http.StatusRequestTimeout
	}
	return true
}

// describe turns the last attempt's error into one a person can act on.
func describe(url string, err error) error {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		return se
	case offline(err):
		return fmt.Errorf("download %s: %w (%v): connect to the internet and retry; cached files are used when present", url, ErrNoNetwork, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("download %s: %w", url, err)
	}
	return fmt.Errorf("download %s: %w: the connection failed; retry, and check any proxy in between if it persists", url, err)
}

// offline says whether err means the server could not be reached at all.
func offline(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}

// commit moves a complete temporary file to its final name atomically and
// makes the rename durable.
func commit(tmp, final string) error {
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store in cache: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store in cache: %w", err)
	}
	if d, err := os.Open(filepath.Dir(final)); err == nil {
		d.Sync() // Best effort: not every file system syncs directories.
		d.Close()
	}
	return nil
}

// sanitize makes a file name from url that is readable and unique enough:
// every byte outside [A-Za-z0-9._-] becomes '_'.
func sanitize(url string) string {
	url = strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	b := []byte(url)
	for i, ch := range b {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-'
		if !ok {
			b[i] = '_'
		}
	}
	s := string(b)
	if len(s) > 200 || strings.HasPrefix(s, ".") {
		// Too long for some file systems, or hidden: use the hash instead.
		h := newHash("sha256")
		h.Write([]byte(url))
		s = fmt.Sprintf("url-%x", h.Sum(nil))
	}
	return s
}

func (c *Cache) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	c.once.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = c.Proxy
		t.DialContext = (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		t.TLSHandshakeTimeout = 15 * time.Second
		t.ResponseHeaderTimeout = 30 * time.Second
		t.MaxIdleConnsPerHost = 8
		c.defaultClient = &http.Client{Transport: t}
	})
	return c.defaultClient
}

func (c *Cache) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
