package hostproxy

import (
	"context"
	"net/url"
	"testing"
)

// TestFromSettings reads macOS's system settings as system_darwin.go
// hands them over.
func TestFromSettings(t *testing.T) {
	ctx := context.Background()
	kv := parseSettings("HTTPSEnable=1\nHTTPSProxy=proxy.corp\nHTTPSPort=3128\nHTTPEnable=1\nHTTPProxy=proxy.corp\nHTTPPort=0\n" +
		"SOCKSEnable=0\nSOCKSProxy=socks.corp\nSOCKSPort=1080\nExceptionsList=*.local,169.254/16,10/8,bad/99,localhost\nExcludeSimpleHostnames=1\n")
	c, err := fromSettings(kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scheme string
		hosts  []string
		want   string
	}{
		{"tcp", []string{"api.example", "203.0.113.1"}, "http://proxy.corp:3128"},
		{"http", []string{"api.example"}, "http://proxy.corp:80"},
		{"tcp", []string{"printer.local"}, ""},
		{"tcp", []string{"", "169.254.3.4"}, ""},
		{"tcp", []string{"", "10.9.8.7"}, ""},
		{"tcp", []string{"intranet"}, ""}, // a simple host name
		{"tcp", []string{"localhost"}, ""},
	} {
		got, err := c.For(ctx, tc.scheme, 443, tc.hosts...)
		s := ""
		if got != nil {
			s = got.String()
		}
		if err != nil || s != tc.want {
			t.Errorf("For(%s, %q) = %q, %v; want %q", tc.scheme, tc.hosts, s, err, tc.want)
		}
	}

	// SOCKS alone stands in for every scheme.
	c, _ = fromSettings(parseSettings("SOCKSEnable=1\nSOCKSProxy=socks.corp\nSOCKSPort=1081\n"), nil)
	if p, _ := c.For(ctx, "tcp", 22, "git.example"); p == nil || p.String() != "socks5://socks.corp:1081" {
		t.Errorf("SOCKS: %v", p)
	}

	// A PAC URL: the script's answer decides, per destination, after the
	// exceptions.
	var asked []string
	pac := func(_ context.Context, target *url.URL) (*url.URL, error) {
		asked = append(asked, target.String())
		return parsePACAnswer("HTTPS pac.corp 8080\nDIRECT\n")
	}
	c, _ = fromSettings(parseSettings("ProxyAutoConfigEnable=1\nProxyAutoConfigURLString=http://wpad/proxy.pac\nExceptionsList=*.local\n"), pac)
	if p, _ := c.For(ctx, "tcp", 443, "api.example", "203.0.113.1"); p == nil || p.String() != "http://pac.corp:8080" {
		t.Errorf("PAC: %v", p)
	}
	if p, _ := c.For(ctx, "tcp", 443, "nas.local"); p != nil {
		t.Errorf("PAC for an exception: %v", p)
	}
	if len(asked) != 1 || asked[0] != "https://api.example:443" {
		t.Errorf("the PAC was asked %q", asked)
	}
	if !c.Set() {
		t.Error("a PAC alone is a proxy set")
	}

	// Nothing enabled: directly.
	c, _ = fromSettings(parseSettings("HTTPSEnable=0\nHTTPSProxy=proxy.corp\n"), nil)
	if c.Set() {
		t.Errorf("disabled settings: %s", c.Describe())
	}
}

func TestParsePACAnswer(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"DIRECT\n", ""},
		{"", ""},
		{"HTTP p1 3128\nDIRECT\n", "http://p1:3128"},
		{"SOCKS s 1080\n", "socks5://s:1080"},
		{"FTP f 21\nHTTPS p2 8443\n", "http://p2:8443"},
	} {
		u, err := parsePACAnswer(tc.in)
		s := ""
		if u != nil {
			s = u.String()
		}
		if err != nil || s != tc.want {
			t.Errorf("parsePACAnswer(%q) = %q, %v; want %q", tc.in, s, err, tc.want)
		}
	}
	if _, err := parsePACAnswer("FTP f 21\n"); err == nil {
		t.Error("an answer with no proxy Sandbar speaks is no error")
	}
}
