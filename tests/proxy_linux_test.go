//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/hostproxy/proxytest"
)

// TestSessionProxy runs the engine behind an HTTP CONNECT proxy of the
// test's own on loopback (HTTPS_PROXY, with NO_PROXY empty: the test's
// servers are on loopback, which NO_PROXY's default exempts): every
// connection the VM makes that the rules allow goes through the proxy
// (its log shows one CONNECT each, to the address the rules approved); a
// denied one never reaches it; when it refuses with 403 the attempt is
// listed as denied in `sandbar net` with the proxy's answer, and the log
// says so. Before that, a proxy URL that does not parse stops the command
// with a message naming the variable.
func TestSessionProxy(t *testing.T) {
	w := newWorld(t)

	bad := append(slices.Clone(w.env), "HTTPS_PROXY=http://proxy.corp:port")
	good := w.env
	w.env = bad
	_, errOut, code := w.run("", "ls")
	w.env = good
	if code == 0 || !strings.Contains(errOut, `HTTPS_PROXY="http://proxy.corp:port" is not a proxy URL`) || !strings.Contains(errOut, "unset HTTPS_PROXY") {
		t.Errorf("sandbar ls with a bad HTTPS_PROXY: exit %d, %q; want a failure naming HTTPS_PROXY and what to do", code, errOut)
	}

	p := proxytest.NewConnect(t)
	w.env = slices.DeleteFunc(w.env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"}, strings.ToUpper(name))
	})
	w.env = append(w.env, "HTTPS_PROXY="+p.URL.String(), "NO_PROXY=")
	allowed := serveLoopback(t, "hello through the proxy")
	denied := serveLoopback(t, "hello from the denied host")
	rules := fmt.Sprintf("host allowed.test 127.0.0.1\nhost denied.test 127.0.0.1\nallow allowed.test:%d\n", allowed.port)
	if out, errOut, code := w.run(rules, "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules --set: %s %s", out, errOut)
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "512", "--disk", "1")
	w.waitState(id, "running")
	target := fmt.Sprintf("127.0.0.1:%d", allowed.port)

	// Allowed: each connection through the proxy.
	for i := range 2 {
		if out, errOut, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 20 http://allowed.test:%d/", allowed.port)); code != 0 || out != "hello through the proxy" {
			t.Fatalf("curl %d of allowed.test: %q %q exit %d", i, out, errOut, code)
		}
	}
	if got := p.Connects(); !slices.Equal(got, []string{target, target}) {
		t.Errorf("the proxy saw %q, want two CONNECT %s (one per connection the VM made)", got, target)
	}
	if n := allowed.conns.Load(); n != 2 {
		t.Errorf("the server had %d connections, want the 2 the proxy carried", n)
	}

	// Denied by the rules: the proxy never hears of it.
	if out, _, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 20 http://denied.test:%d/", denied.port)); code == 0 {
		t.Errorf("denied.test answered %q", out)
	}
	if got := p.Connects(); len(got) != 2 || denied.conns.Load() != 0 {
		t.Errorf("a denied connection reached the proxy (%q) or the server (%d)", got, denied.conns.Load())
	}

	// The proxy refuses: denied in `sandbar net`, with its answer.
	p.Refuse(403)
	if out, _, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 20 http://allowed.test:%d/", allowed.port)); code == 0 {
		t.Errorf("allowed.test answered %q through a refusing proxy", out)
	}
	if got := p.Connects(); len(got) != 3 {
		t.Errorf("the proxy saw %q, want the refused CONNECT third", got)
	}
	var attempts []struct {
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason"`
	}
	if !waitUntil(10*time.Second, 200*time.Millisecond, func() bool {
		if err := json.Unmarshal([]byte(w.ok("net", id, "--json")), &attempts); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(attempts, func(a struct {
			Host    string `json:"host"`
			Port    int    `json:"port"`
			Allowed bool   `json:"allowed"`
			Reason  string `json:"reason"`
		}) bool {
			return a.Host == "allowed.test" && a.Port == allowed.port && !a.Allowed && strings.HasPrefix(a.Reason, "proxy refused: 403 Forbidden")
		})
	}) {
		t.Fatalf("sandbar net does not list the refused attempt as denied with the proxy's answer: %+v", attempts)
	}
	if table := w.ok("net", id); !strings.Contains(table, "denied") || !strings.Contains(table, "proxy refused: 403 Forbidden") {
		t.Errorf("sandbar net:\n%s", table)
	}
	var sys string
	if !waitUntil(time.Minute, 200*time.Millisecond, func() bool {
		_, sys, _ = w.run("", "logs", id)
		return strings.Contains(sys, "this machine's proxy did not: proxy refused: 403 Forbidden") &&
			strings.Contains(sys, "go through this machine's proxy from the environment: HTTPS_PROXY="+p.URL.String())
	}) {
		t.Errorf("the session's log does not say the proxy is used and refused:\n%s", sys)
	}
	w.ok("stop", id)
}
