//go:build linux

package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPortOriginCookies (issue 21, finding 5): a port the guest publishes
// opens at http://<session>.localhost:PORT/, and a real browser does not
// send it the cookies of the person's own apps on localhost.
//
// The guest runs a server on 5173 that logs each request's headers to a
// file. On the host, an app on localhost:X sets a cookie and redirects the
// browser (headless Chromium, from Debian) to the published page: once to
// its own origin, which must reach the guest without the cookie; once, to
// show the test can fail, to http://localhost:PORT/, the address Open used
// before, which must be sent the cookie (browsers key cookies by name, not
// port: RFC 6265 §8.5).
func TestPortOriginCookies(t *testing.T) {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	w := newWorld(t)
	if chromium == "" {
		t.Skip("no chromium here: scripts/install-deps.sh installs it")
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "1", "--memory", "768")
	w.waitState(id, "running")

	const guestLog = "/tmp/origin-headers.log"
	server := `setsid node -e 'require("http").createServer((q,s)=>{require("fs").appendFileSync("` + guestLog + `",JSON.stringify({path:q.url,headers:q.headers})+"\n");s.setHeader("Content-Type","text/html");s.end("<html><body>guest page "+q.url+"</body></html>")}).listen(5173,"0.0.0.0")' </dev/null >/dev/null 2>&1 &`
	if out, errOut, code := w.guestSh(id, server); code != 0 {
		t.Fatalf("start the guest's server: %s %s", out, errOut)
	}
	// Node starts slowly under emulation: wait for it in the guest, then
	// publish (the same as the automatic publishing, which may come
	// first: publishing again returns the port as it is).
	if out, errOut, code := w.guestSh(id, "for i in $(seq 180); do curl -s -o /dev/null http://127.0.0.1:5173/ready && exit 0; sleep 1; done; exit 1"); code != 0 {
		t.Fatalf("the guest's server did not answer within 3 minutes: %s %s", out, errOut)
	}
	w.ok("ports", id, "publish", "5173")
	var ports []struct {
		Guest, Host int
		URL         string
	}
	if err := json.Unmarshal([]byte(w.ok("ports", id, "--json")), &ports); err != nil {
		t.Fatal(err)
	}
	var port struct {
		Guest, Host int
		URL         string
	}
	for _, p := range ports {
		if p.Guest == 5173 {
			port = p
		}
	}
	if port.Host == 0 {
		t.Fatalf("sandbar ports --json does not list guest port 5173: %+v", ports)
	}
	origin := fmt.Sprintf("http://%s.localhost:%d/", id, port.Host)
	if port.URL != origin {
		t.Errorf("sandbar ports --json gives %q, want %q", port.URL, origin)
	}
	if list := w.ok("ports", id); !strings.Contains(list, origin) {
		t.Errorf("sandbar ports does not show %s:\n%s", origin, list)
	}

	// The person's own app on localhost: it sets its session cookie and
	// sends the browser on to ?next=.
	b := make([]byte, 8)
	rand.Read(b)
	secret := "host-app-secret-" + hex.EncodeToString(b)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.SetCookie(rw, &http.Cookie{Name: "session", Value: secret, Path: "/", MaxAge: 3600, HttpOnly: true})
		http.Redirect(rw, r, r.URL.Query().Get("next"), http.StatusFound)
	})}
	go app.Serve(ln)
	t.Cleanup(func() { app.Close() })
	appURL := fmt.Sprintf("http://localhost:%d/login?next=", ln.Addr().(*net.TCPAddr).Port)

	pages := map[string]string{
		"new": origin + "new",
		"old": fmt.Sprintf("http://localhost:%d/old", port.Host),
	}
	dom := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, page := range pages {
		wg.Go(func() {
			got := headlessDOM(t, chromium, appURL+url.QueryEscape(page))
			mu.Lock()
			dom[name] = got
			mu.Unlock()
		})
	}
	wg.Wait()

	out, errOut, code := w.guestSh(id, "cat "+guestLog)
	if code != 0 {
		t.Fatalf("read the guest's log: %s %s", out, errOut)
	}
	seen := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var req struct {
			Path    string
			Headers map[string]string
		}
		if json.Unmarshal([]byte(line), &req) == nil {
			seen[strings.TrimPrefix(req.Path, "/")] = req.Headers
		}
	}
	t.Logf("the guest's server saw: %s", out)
	newReq, ok := seen["new"]
	switch {
	case !ok:
		t.Errorf("the page at %s never reached the guest's server; Chromium printed %q", pages["new"], dom["new"])
	case strings.Contains(fmt.Sprint(newReq), secret):
		t.Errorf("the guest's server, opened at its own origin %s, was sent the localhost app's cookie: %v", origin, newReq)
	case newReq["host"] != fmt.Sprintf("%s.localhost:%d", id, port.Host):
		t.Errorf("the page at the session's origin came with Host %q", newReq["host"])
	}
	if !strings.Contains(dom["new"], "guest page /new") {
		t.Errorf("Chromium did not show the guest's page at %s: %q", pages["new"], dom["new"])
	}
	// The old address, to show the test can fail: the cookie goes along.
	if oldReq, ok := seen["old"]; !ok {
		t.Errorf("the page at %s never reached the guest's server; Chromium printed %q", pages["old"], dom["old"])
	} else if !strings.Contains(oldReq["cookie"], secret) {
		t.Errorf("at http://localhost:%d/ the guest's server was not sent the localhost app's cookie (%v): the test cannot tell the two origins apart", port.Host, oldReq)
	}
}

// headlessDOM loads page in a fresh headless Chromium and returns the DOM
// it ends on. Names other than localhost and *.localhost resolve to
// nothing: the browser reaches only this machine's loopback.
func headlessDOM(t *testing.T, chromium, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost",
		"--user-data-dir="+t.TempDir(), "--dump-dom", page)
	cmd.WaitDelay = 5 * time.Second
	// No session bus, no accessibility bus: nothing is left running.
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=disabled:", "NO_AT_BRIDGE=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Errorf("chromium %s: %v\n%s", page, err, lastLines(e.String(), 20))
	}
	return o.String()
}
