package hostproxy

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnvBad(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string // in the message
	}{
		{map[string]string{"HTTPS_PROXY": "http://proxy:port"}, []string{"HTTPS_PROXY=", "not a proxy URL", "unset HTTPS_PROXY"}},
		{map[string]string{"https_proxy": "ftp://proxy:21"}, []string{"https_proxy=", "scheme ftp"}},
		{map[string]string{"ALL_PROXY": "http://:3128"}, []string{"ALL_PROXY=", "names no host"}},
		{map[string]string{"HTTP_PROXY": "http://proxy:99999"}, []string{"HTTP_PROXY=", "not a port number"}},
		{map[string]string{"HTTPS_PROXY": "https://proxy:443"}, []string{"TLS connection to the proxy"}},
		{map[string]string{"HTTPS_PROXY": "http://user:s3cret@proxy:3128/path"}, []string{"no path", "xxxxx"}},
		{map[string]string{"HTTPS_PROXY": "http://us er:s3cret@pro xy:3128"}, []string{"HTTPS_PROXY=", "xxxxx@pro xy:3128"}},
		{map[string]string{"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.0.0.0/33"}, []string{"NO_PROXY=", "not an address range"}},
	} {
		_, err := FromEnv(env(tc.env))
		if !errors.Is(err, ErrBadProxy) {
			t.Errorf("%v: %v, want ErrBadProxy", tc.env, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not say %q", tc.env, err, w)
			}
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: the message shows the password: %q", tc.env, err)
		}
	}
}

func TestFromEnvChoice(t *testing.T) {
	ctx := context.Background()
	c, err := FromEnv(env(map[string]string{
		"HTTPS_PROXY": "http://upper:1", "https_proxy": "lower:3128",
		"HTTP_PROXY": "http://plain:8080",
		"NO_PROXY":   "internal.example, .corp.example,10.0.0.0/8,192.168.1.7:8443",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scheme string
		port   uint16
		hosts  []string
		want   string
	}{
		{"tcp", 443, []string{"api.example", "203.0.113.5"}, "http://lower:3128"},
		{"https", 443, []string{"api.example"}, "http://lower:3128"},
		{"http", 80, []string{"api.example"}, "http://plain:8080"},
		{"tcp", 443, []string{"internal.example", "203.0.113.5"}, ""},
		{"tcp", 443, []string{"git.internal.example"}, ""},
		{"tcp", 443, []string{"notinternal.example"}, "http://lower:3128"},
		{"tcp", 443, []string{"a.corp.example"}, ""},
		{"tcp", 443, []string{"corp.example"}, ""},
		{"tcp", 22, []string{"", "10.1.2.3"}, ""},
		{"tcp", 8443, []string{"", "192.168.1.7"}, ""},
		{"tcp", 443, []string{"", "192.168.1.7"}, "http://lower:3128"},
		// NO_PROXY is set, so loopback is what it says: proxied.
		{"tcp", 80, []string{"local.test", "127.0.0.1"}, "http://lower:3128"},
	} {
		got, err := c.For(ctx, tc.scheme, tc.port, tc.hosts...)
		s := ""
		if got != nil {
			s = got.String()
		}
		if err != nil || s != tc.want {
			t.Errorf("For(%s, %d, %q) = %q, %v; want %q", tc.scheme, tc.port, tc.hosts, s, err, tc.want)
		}
	}

	// NO_PROXY unset: loopback goes directly; ALL_PROXY stands in.
	c, err = FromEnv(env(map[string]string{"ALL_PROXY": "socks5h://127.0.0.1:1080"}))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := c.For(ctx, "tcp", 80, "local.test", "127.0.0.1"); p != nil {
		t.Errorf("loopback with NO_PROXY unset goes to %v, want directly", p)
	}
	if p, _ := c.For(ctx, "tcp", 80, "localhost"); p != nil {
		t.Errorf("localhost with NO_PROXY unset goes to %v, want directly", p)
	}
	if p, _ := c.For(ctx, "http", 80, "example.org", "203.0.113.9"); p == nil || p.String() != "socks5h://127.0.0.1:1080" {
		t.Errorf("ALL_PROXY for http: %v", p)
	}
	if !strings.Contains(c.Describe(), "ALL_PROXY=socks5h://127.0.0.1:1080") {
		t.Errorf("Describe: %q", c.Describe())
	}

	// Nothing set: directly, and said so.
	c, err = FromEnv(env(nil))
	if err != nil || c.Set() {
		t.Fatalf("empty environment: %+v, %v", c, err)
	}
	if p, _ := c.For(ctx, "tcp", 443, "example.org"); p != nil {
		t.Errorf("no proxy set, yet %v", p)
	}
	// An empty lower-case variable does not hide the upper-case one.
	c, _ = FromEnv(env(map[string]string{"https_proxy": "", "HTTPS_PROXY": "http://upper:3128", "no_proxy": "", "NO_PROXY": ""}))
	if p, _ := c.For(ctx, "tcp", 443, "example.org", "127.0.0.1"); p == nil || p.String() != "http://upper:3128" {
		t.Errorf("https_proxy empty, HTTPS_PROXY set: %v", p)
	}
	// NO_PROXY=* turns it off.
	c, _ = FromEnv(env(map[string]string{"HTTPS_PROXY": "proxy:1", "NO_PROXY": "*"}))
	if p, _ := c.For(ctx, "tcp", 443, "example.org"); p != nil {
		t.Errorf("NO_PROXY=*, yet %v", p)
	}
	// A password never shows in Describe.
	c, _ = FromEnv(env(map[string]string{"HTTPS_PROXY": "http://me:s3cret@proxy:1"}))
	if d := c.Describe(); strings.Contains(d, "s3cret") || !strings.Contains(d, "proxy:1") {
		t.Errorf("Describe: %q", d)
	}
}
