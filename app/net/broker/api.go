package broker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultUpstream is where the API broker sends requests unless told
// otherwise.
const DefaultUpstream = "https://api.anthropic.com"

// APIConfig configures NewAPI.
type APIConfig struct {
	// Upstream is the model API: scheme, host and an optional base path.
	// Default DefaultUpstream; http:// is allowed (a scripted API on the
	// host's loopback, in tests).
	Upstream *url.URL
	// Credentials are swapped into requests: ANTHROPIC_API_KEY travels in
	// x-api-key, CLAUDE_CODE_OAUTH_TOKEN in Authorization ("Bearer
	// <token>"). Each Host must be empty or the upstream's host.
	Credentials []Credential
	// Transport reaches the upstream; default: keep-alives, HTTP/2 to TLS
	// upstreams, 10 s to dial and to shake hands, 5 minutes for response
	// headers (the model may think long), no limit on a streaming body,
	// with Proxy and RootCAs below.
	Transport http.RoundTripper
	// Proxy is the default Transport's proxy (hostproxy.Config.HTTPProxy:
	// the host's proxy, as the engine was configured); nil connects
	// directly. The guest's environment never sets it.
	Proxy func(*http.Request) (*url.URL, error)
	// RootCAs verify a TLS upstream with the default Transport; nil means
	// the system's roots.
	RootCAs *x509.CertPool
	// OnRequest, if set, is called once per request when its response is
	// done, on the request's goroutine: keep it quick.
	OnRequest func(RequestInfo)
	Logger    *slog.Logger // default: discard
}

// apiHeaders are the headers the model API reads credentials from: the
// API broker swaps a sentinel in these and in no other, so the real key
// never rides in a header an upstream might echo back in a form the
// scrubber cannot find (anthropic-beta's "unexpected value" error, lower-
// cased or cut).
var apiHeaders = map[string]bool{"X-Api-Key": true, "Authorization": true}

// API forwards the agent's model-API requests to the upstream, swapping
// sentinels for real credentials. It is an http.Handler for the plain-HTTP
// server the session network runs at its gateway (see NewServer).
//
// Every request, whatever its method and path (query kept), goes to the
// configured upstream; the guest picks only the path. No X-Forwarded-For
// or other header naming the guest is added. Sentinels are swapped in the
// x-api-key and Authorization headers only; one in another header goes
// on as it is. A request that carries no
// sentinel is forwarded as it is; one that carries a sentinel-shaped token
// that is none of Credentials gets a 401 from the broker. An unreachable
// upstream gets a 502 (504 on a timeout). The broker's own errors have the
// Anthropic API's error shape, so Claude Code shows their message.
type API struct {
	fwd *forwarder
}

// NewAPI returns the model-API broker for cfg.
func NewAPI(cfg APIConfig) (*API, error) {
	up := cfg.Upstream
	if up == nil {
		up, _ = url.Parse(DefaultUpstream)
	}
	if (up.Scheme != "https" && up.Scheme != "http") || up.Host == "" || up.User != nil || up.RawQuery != "" || up.Fragment != "" {
		return nil, fmt.Errorf("model API upstream %q: give an http or https URL with a host and no user, query or fragment", up.Redacted())
	}
	base := &url.URL{Scheme: up.Scheme, Host: up.Host, Path: up.Path, RawPath: up.RawPath}
	host := strings.ToLower(up.Hostname())
	for _, c := range cfg.Credentials {
		if c.Host != "" && !strings.EqualFold(c.Host, host) {
			return nil, fmt.Errorf("credential %s is bound to %s, not to the model API's host %s: Sandbar will not send it there", c.Name, c.Host, host)
		}
	}
	swap, err := newSwapper(cfg.Credentials, "", true, true)
	if err != nil {
		return nil, err
	}
	swap.anyOf = apiHeaders
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tr := cfg.Transport
	if tr == nil {
		tr = newAPITransport(cfg.Proxy, cfg.RootCAs)
	}
	f := newForwarder(&forwarder{
		host:      host,
		base:      base,
		swap:      swap,
		scrub:     newScrubber(cfg.Credentials),
		onRequest: cfg.OnRequest,
		log:       logger,
		fail:      writeAPIError,
	}, tr)
	return &API{fwd: f}, nil
}

// ServeHTTP forwards one request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.fwd.ServeHTTP(w, r) }

// newAPITransport is the default Transport: tuned for a few long-lived,
// long-thinking streams to one host. It never reads proxy variables
// itself: the engine's proxy configuration comes in as proxy.
func newAPITransport(proxy func(*http.Request) (*url.URL, error), roots *x509.CertPool) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var tc *tls.Config
	if roots != nil {
		tc = &tls.Config{RootCAs: roots}
	}
	return &http.Transport{
		Proxy:                  proxy,
		TLSClientConfig:        tc,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  5 * time.Minute,
		ExpectContinueTimeout:  1 * time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    32,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// writeAPIError writes an error in the Anthropic API's shape:
// {"type":"error","error":{"type":kind,"message":msg}}.
func writeAPIError(w http.ResponseWriter, status int, kind, msg string) {
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error detail `json:"error"`
	}{"error", detail{kind, msg}})
	h := w.Header()
	clear(h)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// NewServer returns the http.Server to run a broker handler on: 30 s to
// read a request's headers, at most 1 MiB of them, idle keep-alive
// connections closed after 5 minutes, no limit on bodies (they stream) and
// the server's own complaints logged to logger (nil: discarded). The
// header bound is the server's: a broker handler run on another server
// gets that server's.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          newErrorLog(logger),
	}
}

func newErrorLog(logger *slog.Logger) *log.Logger {
	return slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
}
