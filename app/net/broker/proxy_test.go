package broker_test

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"sandbar/app/net/broker"
	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hostproxy/proxytest"
)

// TestAPIUpstreamThroughProxy: with the host's proxy configured, the API
// broker reaches a TLS upstream through CONNECT, with the key swapped in
// as always; a proxy that refuses gets the agent a 502 that says so.
func TestAPIUpstreamThroughProxy(t *testing.T) {
	var gotKey string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	p := proxytest.NewConnect(t)
	env := map[string]string{"HTTPS_PROXY": p.URL.String(), "NO_PROXY": ""}
	pc, err := hostproxy.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(up.URL)
	cred := credential(t, "ANTHROPIC_API_KEY", "", "", realAPIKey)
	api, err := broker.NewAPI(broker.APIConfig{Upstream: u, Credentials: []broker.Credential{cred}, Proxy: pc.HTTPProxy, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, api)
	ask := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader("{}"))
		req.Header.Set("X-Api-Key", cred.Sentinel)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ask(); code != http.StatusOK || body != `{"ok":true}` {
		t.Fatalf("through the proxy: %d %s", code, body)
	}
	if gotKey != realAPIKey {
		t.Errorf("the upstream got x-api-key %q, want the real key", gotKey)
	}
	if got := p.Connects(); !slices.Equal(got, []string{u.Host}) {
		t.Errorf("the proxy saw %q, want one CONNECT %s", got, u.Host)
	}

	// A new connection the proxy refuses: the agent is told.
	p.Refuse(http.StatusForbidden)
	api2, _ := broker.NewAPI(broker.APIConfig{Upstream: u, Credentials: []broker.Credential{cred}, Proxy: pc.HTTPProxy, RootCAs: roots})
	base = serve(t, api2)
	if code, body := ask(); code != http.StatusBadGateway || !strings.Contains(body, "Forbidden") {
		t.Errorf("a refusing proxy: %d %s, want 502 naming the proxy's answer", code, body)
	}
}
