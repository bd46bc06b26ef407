package hostproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Config is the proxy setup of the person's machine. A nil *Config, or
// one with nothing set, dials directly. It is read once (FromEnv, System)
// and not changed after.
type Config struct {
	// https carries TLS and every other TCP connection; http carries
	// plain-http requests; all stands in for either when it is not set.
	https, http, all *url.URL
	// names say which variable each came from, for messages.
	httpsVar, httpVar, allVar string
	bypass                    noProxy
	// resolve, when set, picks the proxy per destination (a PAC script,
	// on macOS): nil URL means direct. It is asked only for destinations
	// bypass does not exempt.
	resolve func(ctx context.Context, target *url.URL) (*url.URL, error)
	// from says where the settings came from, for Describe.
	from string
}

// ErrBadProxy says a proxy setting could not be read; the error is a
// *SettingError.
var ErrBadProxy = errors.New("the proxy setting is not valid")

// SettingError says which proxy setting is not valid, why, and what to
// do; a password in it is hidden.
type SettingError struct {
	Name, Value string
	// What the value is not ("a proxy URL"), why, and what to give.
	What, Why, Give string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s=%q is not %s (%s): give %s, or unset %s", e.Name, e.Value, e.What, e.Why, e.Give, e.Name)
}

// Is makes errors.Is(err, ErrBadProxy) true.
func (e *SettingError) Is(target error) bool { return target == ErrBadProxy }

// Lookup reads one environment variable (os.LookupEnv).
type Lookup func(name string) (string, bool)

// DefaultNoProxy is what bypasses the proxy when NO_PROXY is not set: the
// host's own loopback, which no proxy elsewhere can reach (a name a rule
// maps to 127.0.0.1 reaches this machine directly). A NO_PROXY that is
// set, even empty, is taken as written.
const DefaultNoProxy = "localhost,127.0.0.0/8,::1"

// FromEnv reads HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (each
// also in lower case, which wins when both are set and not empty, as curl
// and Go read them).
// A URL that does not parse is an error naming the variable.
func FromEnv(lookup Lookup) (*Config, error) {
	c := &Config{from: "the environment"}
	// The first of lower and upper case that is not empty; set says
	// either is set, even empty.
	get := func(upper string) (v, name string, set bool) {
		for _, n := range []string{strings.ToLower(upper), upper} {
			w, ok := lookup(n)
			set = set || ok
			if ok && strings.TrimSpace(w) != "" {
				return w, n, true
			}
		}
		return "", upper, set
	}
	var err error
	for _, p := range []struct {
		name string
		dst  **url.URL
		used *string
	}{{"HTTPS_PROXY", &c.https, &c.httpsVar}, {"HTTP_PROXY", &c.http, &c.httpVar}, {"ALL_PROXY", &c.all, &c.allVar}} {
		v, name, _ := get(p.name)
		if *p.dst, err = ParseURL(name, v); err != nil {
			return nil, err
		}
		*p.used = name
	}
	np, name, set := get("NO_PROXY")
	if !set {
		np = DefaultNoProxy
	}
	if c.bypass, err = parseNoProxy(np); err != nil {
		return nil, &SettingError{Name: name, Value: np, What: "a list of hosts to reach directly", Why: err.Error(),
			Give: "names, addresses or CIDR ranges (10.0.0.0/8), each with an optional :port, separated by commas"}
	}
	return c, nil
}

// ParseURL reads a proxy URL from the setting named name: empty is no
// proxy; "host:port" is taken as http://host:port, as curl takes it.
func ParseURL(name, v string) (*url.URL, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	orig := v
	bad := func(why string) error {
		return &SettingError{Name: name, Value: redact(orig), What: "a proxy URL", Why: why,
			Give: "http://[user:password@]host:port, socks5://host:port or socks5h://host:port"}
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, bad(err.Error())
	}
	switch u.Scheme = strings.ToLower(u.Scheme); u.Scheme {
	case "http", "socks5", "socks5h":
	case "https":
		return nil, bad("a TLS connection to the proxy itself is not supported")
	default:
		return nil, bad("scheme " + u.Scheme + " is none of http, socks5, socks5h")
	}
	if u.Hostname() == "" {
		return nil, bad("it names no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad("port " + p + " is not a port number")
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, bad("a proxy URL has no path, query or fragment")
	}
	u.Path = ""
	return u, nil
}

// redact hides a password in a proxy setting, for messages.
func redact(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		return u.Redacted()
	}
	if at := strings.LastIndex(v, "@"); at >= 0 {
		scheme := ""
		if i := strings.Index(v, "://"); i >= 0 && i < at {
			scheme = v[:i+3]
		}
		return scheme + "xxxxx" + v[at:]
	}
	return v
}

// proxyAddr is the proxy's host:port, with the scheme's default port.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Set says some proxy is configured.
func (c *Config) Set() bool {
	return c != nil && (c.https != nil || c.http != nil || c.all != nil || c.resolve != nil)
}

// Describe says what is set, for the log: the proxies (no password) and
// what bypasses them.
func (c *Config) Describe() string {
	if !c.Set() {
		return "no proxy: Sandbar's connections go directly"
	}
	var parts []string
	for _, p := range []struct {
		name string
		u    *url.URL
	}{{c.httpsVar, c.https}, {c.httpVar, c.http}, {c.allVar, c.all}} {
		if p.u != nil {
			parts = append(parts, p.name+"="+p.u.Redacted())
		}
	}
	if c.resolve != nil {
		parts = append(parts, "a proxy auto-configuration (PAC) script")
	}
	return fmt.Sprintf("proxy from %s: %s; not for %s", c.from, strings.Join(parts, ", "), c.bypass)
}

// For is the proxy for a connection of scheme ("https", "http", or "tcp"
// for any other TCP) to port on hosts (the name the connection was made
// by and the address it goes to, either may be empty): nil when it goes
// directly. NO_PROXY exempts it when any of hosts matches.
func (c *Config) For(ctx context.Context, scheme string, port uint16, hosts ...string) (*url.URL, error) {
	if !c.Set() {
		return nil, nil
	}
	for _, h := range hosts {
		if h != "" && c.bypass.match(h, port) {
			return nil, nil
		}
	}
	if c.resolve != nil {
		host := ""
		for _, h := range hosts {
			if h != "" {
				host = h
				break
			}
		}
		s := scheme
		if s == "tcp" {
			s = "https"
		}
		return c.resolve(ctx, &url.URL{Scheme: s, Host: net.JoinHostPort(host, strconv.Itoa(int(port)))})
	}
	var p *url.URL
	switch scheme {
	case "http":
		p = c.http
	default:
		p = c.https
	}
	if p == nil {
		p = c.all
	}
	return p, nil
}

// HTTPProxy is http.Transport's Proxy for this configuration: net/http
// speaks CONNECT and SOCKS5 to the proxy itself.
func (c *Config) HTTPProxy(r *http.Request) (*url.URL, error) {
	port := r.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[r.URL.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return c.For(r.Context(), r.URL.Scheme, uint16(n), r.URL.Hostname())
}

// DialFunc opens a connection (net.Dialer.DialContext).
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DialTCP connects to addr, which name resolved to (name may be empty):
// through the proxy when one applies, by address (what the caller's
// rules approved; the proxy does not resolve the name again), else
// directly. direct opens connections on the host, to the proxy too. A
// proxy's refusal is a *RefusedError.
func (c *Config) DialTCP(ctx context.Context, direct DialFunc, name string, addr netip.AddrPort) (net.Conn, error) {
	p, err := c.For(ctx, "tcp", addr.Port(), name, addr.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("find the proxy for %s: %w", addr, err)
	}
	if p == nil {
		return direct(ctx, "tcp", addr.String())
	}
	return Dial(ctx, direct, p, addr.String())
}
