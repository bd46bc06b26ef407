// Package regclient holds what every registry client of the environment
// packages shares (image pulls in ociimage, features in features): how a
// reference is parsed, plain HTTP only to this machine's loopback, and
// where Docker's credentials are read. It does not pull anything itself.
package regclient

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ParseRef parses a reference. Plain HTTP is allowed only for a registry
// on this machine's loopback; Transport enforces it too. what names the
// kind of thing in an error ("image", "feature").
func ParseRef(ref, what string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil || strings.HasPrefix(ref, "-") {
		return nil, fmt.Errorf("%q is not %s reference: write it as [REGISTRY/]NAME[:TAG] or NAME@sha256:DIGEST", ref, article(what))
	}
	if IsLoopback(r.Context().RegistryStr()) {
		return name.ParseReference(ref, name.Insecure)
	}
	return r, nil
}

func article(what string) string {
	if what != "" && strings.ContainsRune("aeiou", rune(what[0])) {
		return "an " + what
	}
	return "a " + what
}

// IsLoopback tells whether hostport names this machine's loopback.
func IsLoopback(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Base is the transport a pull starts from: the registry library's
// default, through proxy when one is given (the host's proxy,
// hostproxy.Config.HTTPProxy: CONNECT or SOCKS5, as the person's
// settings say).
func Base(proxy func(*http.Request) (*url.URL, error)) http.RoundTripper {
	t, ok := remote.DefaultTransport.(*http.Transport)
	if proxy == nil || !ok {
		return remote.DefaultTransport
	}
	t = t.Clone()
	t.Proxy = proxy
	return t
}

// Transport wraps next so that it refuses plain HTTP to any host but
// loopback, whatever the registry library would try (it falls back to
// HTTP for private addresses) and wherever a token realm points.
func Transport(next http.RoundTripper) http.RoundTripper { return loopbackOnlyHTTP{next} }

type loopbackOnlyHTTP struct{ next http.RoundTripper }

func (t loopbackOnlyHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !IsLoopback(r.URL.Host) {
		return nil, fmt.Errorf("refused plain HTTP to %s: only a registry on this machine's loopback may be used without TLS", r.URL.Host)
	}
	return t.next.RoundTrip(r)
}

// DockerConfigPath is where authn.DefaultKeychain reads Docker's
// credentials, for messages that name it.
func DockerConfigPath() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	return "~/.docker/config.json"
}
