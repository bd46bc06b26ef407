//go:build linux

package tests

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// tlsGetSource is a Go HTTPS client for the guest: Go's own TLS stack,
// which reads the system bundle (or SSL_CERT_FILE) and nothing of curl's.
const tlsGetSource = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	io.Copy(os.Stdout, resp.Body)
}
`

// buildTLSGet builds the Go client for the guest into the repository's
// bin/tlsget and commits it, so the session's workspace holds it (the
// guest has no Go toolchain).
func (w *world) buildTLSGet(t *testing.T) {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(tlsGetSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(w.repo, "bin", "tlsget"), "main.go")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the guest's Go client: %v\n%s", err, out)
	}
	w.git("add", "bin/tlsget")
	w.git("commit", "-qm", "the Go client")
}

// TestHostCerts: a TLS-inspecting network on loopback. A CA the test
// makes signs an HTTPS server's certificate for corp.test; the engine's
// machine trusts the CA (a certificate folder read as it reads
// /usr/local/share/ca-certificates); a host rule maps the name to the
// server. From the session's VM, curl and a Go client reach it without
// -k, the session's log names the certificate carried and the malformed
// file left out, and `sandbar net certs` lists it. With the setting off
// the restarted session trusts it no longer: both fail on the
// certificate.
func TestHostCerts(t *testing.T) {
	w := newWorld(t)
	const host = "corp.test"
	caPEM, cert := testTLS(t, host)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "hello through the inspection") }),
	}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	certs := t.TempDir()
	os.WriteFile(filepath.Join(certs, "corp-inspection.crt"), caPEM, 0o644)
	os.WriteFile(filepath.Join(certs, "broken.crt"), []byte("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n"), 0o644)
	w.env = append(w.env, "SANDBAR_HOST_CA_DIR="+certs)
	w.buildTLSGet(t)
	if out, errOut, code := w.run(fmt.Sprintf("host %s 127.0.0.1\nallow %s:%d\n", host, host, port), "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules: %s %s", out, errOut)
	}

	var listed struct {
		On    bool `json:"on"`
		Certs []struct {
			Subject string `json:"subject"`
			SHA256  string `json:"sha256"`
		} `json:"certs"`
		Skipped []struct {
			From string `json:"from"`
		} `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(w.ok("net", "certs", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if !listed.On || len(listed.Certs) != 1 || listed.Certs[0].Subject != "CN=test upstream CA" || len(listed.Skipped) != 1 || filepath.Base(listed.Skipped[0].From) != "broken.crt" {
		t.Fatalf("sandbar net certs --json: %+v", listed)
	}
	fp := listed.Certs[0].SHA256

	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "2", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	u := fmt.Sprintf("https://%s:%d/", host, port)
	if out, errOut, code := w.guestSh(id, "curl -sS -m 30 "+u); code != 0 || out != "hello through the inspection" {
		t.Fatalf("curl in the VM: exit %d: %q %q", code, out, errOut)
	}
	if out, errOut, code := w.guestSh(id, "/workspace/bin/tlsget "+u); code != 0 || out != "hello through the inspection" {
		t.Fatalf("the Go client in the VM: exit %d: %q %q", code, out, errOut)
	}
	_, sys, _ := w.run("", "logs", id)
	for _, want := range []string{
		"trust: carrying a certificate this machine trusts: CN=test upstream CA (SHA-256 " + fp + ")",
		"trust: not carried: " + filepath.Join(certs, "broken.crt"),
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("the session's log lacks %q:\n%s", want, clip(sys))
		}
	}
	w.ok("stop", id)

	// Off: the same session, restarted on the same disk, trusts it no
	// longer.
	if out := w.ok("net", "certs", "off"); !strings.Contains(out, "no longer carried") {
		t.Errorf("net certs off says %q", out)
	}
	w.ok("restart", id)
	w.waitState(id, "running")
	out, errOut, code := w.guestSh(id, "curl -sS -m 30 "+u)
	if code != 60 || !strings.Contains(errOut, "SSL certificate problem") {
		t.Errorf("curl in the VM with the setting off: exit %d: %q %q; want exit 60, the certificate error", code, out, errOut)
	}
	out, errOut, code = w.guestSh(id, "/workspace/bin/tlsget "+u)
	if code == 0 || !strings.Contains(errOut, "certificate signed by unknown authority") {
		t.Errorf("the Go client in the VM with the setting off: exit %d: %q %q; want the certificate error", code, out, errOut)
	}
	if _, sys, _ := w.run("", "logs", id); !strings.Contains(sys, "trust: this machine's certificates are not carried into sessions") {
		t.Errorf("the log does not say the certificates are off:\n%s", clip(sys))
	}
	w.ok("stop", id)
}

// goModuleProxy is the first HTTPS proxy `go env GOPROXY` names, and
// whether there is one.
func goModuleProxy(t *testing.T) (*url.URL, bool) {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return nil, false
	}
	for _, p := range strings.FieldsFunc(strings.TrimSpace(string(out)), func(r rune) bool { return r == ',' || r == '|' }) {
		if u, err := url.Parse(p); err == nil && u.Scheme == "https" && u.Host != "" {
			return u, true
		}
	}
	return nil, false
}

// TestHostCertsModuleProxy: on this machine, for real. With the address
// the Go module proxy's name resolves to allowed in Sandbar's rules (as a
// person would allow it), curl in the VM fetches a small file from it
// over HTTPS, through whatever inspects this machine's HTTPS, because the
// VM trusts what this machine trusts. Skipped where this machine cannot
// reach the proxy itself.
func TestHostCertsModuleProxy(t *testing.T) {
	proxy, ok := goModuleProxy(t)
	if !ok {
		t.Skip("go env GOPROXY names no HTTPS module proxy")
	}
	guestImage(t)
	name := proxy.Hostname()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil || len(addrs) == 0 {
		t.Skipf("this machine cannot resolve the Go module proxy's name (go env GOPROXY): %v", err)
	}
	list := strings.TrimSuffix(proxy.String(), "/") + "/golang.org/x/text/@v/list"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, list, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("this machine has no network to the Go module proxy (go env GOPROXY): %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Skipf("the Go module proxy answers this machine %s", resp.Status)
	}

	w := newWorld(t)
	var rules strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&rules, "allow %s:443\n", urlHost(a))
	}
	if out, errOut, code := w.run(rules.String(), "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules: %s %s", out, errOut)
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "2", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")
	out, errOut, code := w.guestSh(id, "curl -sS -m 60 "+list)
	if code == 60 || strings.Contains(errOut, "certificate") {
		t.Fatalf("curl in the VM does not trust the Go module proxy's certificate: exit %d: %s", code, errOut)
	}
	if code != 0 {
		// The TLS handshake passed (the trust is what this test is
		// about); HTTP/2 through this machine's network has been seen
		// to end a stream early (curl exit 18). Say so, and fetch over
		// HTTP/1.1.
		t.Logf("curl over HTTP/2 in the VM: exit %d: %s; again over HTTP/1.1", code, strings.TrimSpace(errOut))
		out, errOut, code = w.guestSh(id, "curl --http1.1 -sS -m 60 "+list)
	}
	if code != 0 || !strings.Contains(out, "v0.") {
		_, sys, _ := w.run("", "logs", id)
		t.Fatalf("curl of the module list from the Go module proxy in the VM: exit %d: %q %q\nlog:\n%s", code, clip(out), errOut, clip(sys))
	}
	// A Go toolchain zip, as the first failure fetched it: the
	// whole file, its length as the proxy states it.
	zip := strings.TrimSuffix(proxy.String(), "/") + "/golang.org/toolchain/@v/v0.0.1-go1.22.12.linux-amd64.zip"
	out, errOut, code = w.guestSh(id, "curl --http1.1 -sS -m 300 -o /dev/null -w '%{http_code} %{size_download}\\n' -D /tmp/h "+zip+" && grep -i '^content-length:' /tmp/h")
	if f := strings.Fields(out); code != 0 || len(f) != 4 || f[0] != "200" || f[1] != f[3] || f[1] == "0" {
		t.Fatalf("curl of a Go toolchain zip from the Go module proxy in the VM: exit %d: %q %q", code, clip(out), errOut)
	}
	// TestImageBuildsAGoProject goes on from here: go get, build and test
	// through this proxy with a Go toolchain from apt.
	w.ok("stop", id)
}
