package download

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hostproxy/proxytest"
)

// TestFetchThroughProxy: the default client goes through the proxy it is
// given (the engine's).
func TestFetchThroughProxy(t *testing.T) {
	body := []byte(strings.Repeat("through the proxy ", 1000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	p := proxytest.NewConnect(t)
	env := map[string]string{"HTTP_PROXY": p.URL.String(), "NO_PROXY": ""}
	pc, err := hostproxy.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t)
	c.Proxy = pc.HTTPProxy
	path, err := c.Fetch(context.Background(), srv.URL+"/pkg.deb", sha256Digest(body))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(body) {
		t.Errorf("fetched %d bytes, want %d", len(b), len(body))
	}
	if got := p.Requests(); !slices.Equal(got, []string{srv.URL + "/pkg.deb"}) {
		t.Errorf("the proxy forwarded %q, want the one download", got)
	}

}
