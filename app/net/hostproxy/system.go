package hostproxy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// The macOS system settings, as system_darwin.go reads them from
// CFNetworkCopySystemProxySettings: one "Key=value" line each, with the
// dictionary's own key names (an array's strings joined by commas). They
// are turned into a Config here, where Linux can test it.

// envSet says a proxy variable is set in the environment, which then
// wins over the system's settings (a terminal that sets one means it).
func envSet(lookup Lookup) bool {
	for _, n := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		for _, k := range []string{n, strings.ToLower(n)} {
			if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" {
				return true
			}
		}
	}
	return false
}

// parseSettings reads the "Key=value" lines.
func parseSettings(text string) map[string]string {
	kv := map[string]string{}
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), "=")
		if ok {
			kv[k] = v
		}
	}
	return kv
}

// fromSettings is the Config the system settings kv describe; pac, when
// the settings name a proxy auto-configuration (a PAC URL, or discovery),
// picks the proxy per destination.
func fromSettings(kv map[string]string, pac func(ctx context.Context, target *url.URL) (*url.URL, error)) (*Config, error) {
	c := &Config{from: "the system settings", httpsVar: "HTTPS", httpVar: "HTTP", allVar: "SOCKS"}
	on := func(k string) bool { return kv[k] == "1" }
	proxy := func(kind, scheme string) (*url.URL, error) {
		if !on(kind + "Enable") {
			return nil, nil
		}
		host, port := strings.TrimSpace(kv[kind+"Proxy"]), strings.TrimSpace(kv[kind+"Port"])
		if host == "" {
			return nil, nil
		}
		if port == "" || port == "0" {
			port = map[string]string{"http": "80", "socks5": "1080"}[scheme]
		}
		return ParseURL("the system's "+kind+" proxy", scheme+"://"+net.JoinHostPort(host, port))
	}
	var err error
	if c.https, err = proxy("HTTPS", "http"); err != nil {
		return nil, err
	}
	if c.http, err = proxy("HTTP", "http"); err != nil {
		return nil, err
	}
	if c.all, err = proxy("SOCKS", "socks5"); err != nil {
		return nil, err
	}
	c.bypass = lenientNoProxy(kv["ExceptionsList"])
	c.bypass.simple = on("ExcludeSimpleHostnames")
	if pac != nil && (on("ProxyAutoConfigEnable") || on("ProxyAutoDiscoveryEnable")) {
		c.resolve = pac
	}
	return c, nil
}

// lenientNoProxy reads the system's exceptions: macOS writes prefixes
// short ("169.254/16"), and an entry that still does not read is skipped
// rather than failing every connection.
func lenientNoProxy(list string) noProxy {
	np := noProxy{text: list}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if addr, bits, ok := strings.Cut(f, "/"); ok && strings.Count(addr, ".") < 3 && !strings.Contains(addr, ":") {
			f = addr + strings.Repeat(".0", 3-strings.Count(addr, ".")) + "/" + bits
		}
		if one, err := parseNoProxy(f); err == nil {
			np.all = np.all || one.all
			np.entries = append(np.entries, one.entries...)
		}
	}
	return np
}

// parsePACAnswer picks the first proxy of CFNetwork's answer for a URL:
// lines "TYPE HOST PORT", TYPE one of DIRECT, HTTP, HTTPS (both spoken to
// in HTTP, with CONNECT) and SOCKS. Nil means directly.
func parsePACAnswer(text string) (*url.URL, error) {
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "DIRECT" {
			return nil, nil
		}
		if len(f) != 3 {
			continue
		}
		scheme := map[string]string{"HTTP": "http", "HTTPS": "http", "SOCKS": "socks5"}[f[0]]
		if scheme == "" {
			continue
		}
		if n, err := strconv.Atoi(f[2]); err != nil || n < 1 || n > 65535 {
			continue
		}
		return ParseURL("the proxy auto-configuration's answer", scheme+"://"+net.JoinHostPort(f[1], f[2]))
	}
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	return nil, fmt.Errorf("the proxy auto-configuration answered no proxy Sandbar speaks (%q)", strings.TrimSpace(text))
}

// pacCache keeps the proxy auto-configuration's answer per scheme, host
// and port, so a script is run once per destination, not per connection.
type pacCache struct {
	mu sync.Mutex
	m  map[string]*url.URL
}

// maxPACCache bounds pacCache; past it, it starts again empty.
const maxPACCache = 1024

func (p *pacCache) get(k string) (*url.URL, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.m[k]
	return u, ok
}

func (p *pacCache) put(k string, u *url.URL) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxPACCache {
		p.m = map[string]*url.URL{}
	}
	p.m[k] = u
}
