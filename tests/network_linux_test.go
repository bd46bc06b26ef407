//go:build linux

package tests

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loopbackServer is an HTTP server on the host's 127.0.0.1 that answers
// body and counts the connections it accepted.
type loopbackServer struct {
	port  int
	conns atomic.Int64
}

func serveLoopback(t *testing.T, body string) *loopbackServer {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &loopbackServer{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }),
		ConnState: func(_ net.Conn, st http.ConnState) { s.conns.Add(map[bool]int64{true: 1}[st == http.StateNew]) },
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// hostAddrs are this machine's own addresses other than loopback: the
// routes a guest might try to reach the host's services by.
func hostAddrs(t *testing.T) []string {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() {
			continue
		}
		out = append(out, ipn.IP.String())
	}
	return out
}

// guestSh runs a shell script in the session's VM as the agent user.
func (w *world) guestSh(id, script string) (string, string, int) {
	w.t.Helper()
	return w.run("", "exec", id, "--", "sh", "-c", script)
}

// urlHost brackets an IPv6 address for a URL.
func urlHost(a string) string {
	if strings.Contains(a, ":") {
		return "[" + a + "]"
	}
	return a
}

// TestSessionNetwork runs one session VM on Sandbar's own network, with
// the default allowlist and host loopback services as test hosts: the
// guest reaches a loopback server only by the name and port a rule of
// Sandbar's settings allows, and reaches nothing of the host by any other
// route (the gateway, QEMU's old 10.0.2.2, the host's own addresses,
// IPv6, link-local, private ranges, a name mapped but not allowed, UDP);
// a denied connection fails fast in the guest and is in the log and in
// `sandbar net`; allowing it for the session works at once, without a
// restart; ports the guest listens on (node, on every interface and on
// loopback only) are published on the host's 127.0.0.1, a port taken on
// the host is published on another, and they close with the session.
func TestSessionNetwork(t *testing.T) {
	w := newWorld(t)
	allowed := serveLoopback(t, "hello from the allowed host")
	denied := serveLoopback(t, "hello from the denied host")
	private := serveLoopback(t, "the person's local service")
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpGot := make(chan string, 4)
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udpGot <- string(buf[:n])
		}
	}()

	// Sandbar's settings map test names to the host's loopback (as the
	// person's own DNS entries would) and allow one of them exactly.
	rules := fmt.Sprintf("host allowed.test 127.0.0.1\nhost denied.test 127.0.0.1\nhost private.test 127.0.0.1\nallow allowed.test:%d\n", allowed.port)
	if out, errOut, code := w.run(rules, "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules --set: %s %s", out, errOut)
	}
	// The repository's own rules try to open the host's loopback: a
	// repository may not (only the person's settings may).
	if err := os.MkdirAll(filepath.Join(w.repo, ".sandbar"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(w.repo, ".sandbar", "network"), fmt.Appendf(nil, "allow 127.0.0.1:%d\nallow private.test:%d\n", private.port, private.port), 0o644)
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "2", "--memory", "1024", "--disk", "1")
	os.RemoveAll(filepath.Join(w.repo, ".sandbar"))
	w.waitState(id, "running")

	// The allowed name and port.
	if out, errOut, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 20 http://allowed.test:%d/", allowed.port)); code != 0 || out != "hello from the allowed host" {
		t.Fatalf("the allowed host: %q %q exit %d", out, errOut, code)
	}

	// A denied one fails fast, with an error the guest can read.
	out, errOut, code := w.guestSh(id, fmt.Sprintf(`s=$(date +%%s%%N); curl -sS -m 20 http://denied.test:%d/; c=$?; e=$(date +%%s%%N); echo "exit=$c ms=$(( (e-s)/1000000 ))"`, denied.port))
	var curlExit, ms int
	if _, err := fmt.Sscanf(out[strings.LastIndex(out, "exit="):], "exit=%d ms=%d", &curlExit, &ms); err != nil || curlExit == 0 {
		t.Fatalf("the denied host: %q %q exit %d", out, errOut, code)
	}
	if !strings.Contains(errOut, "Couldn't connect") && !strings.Contains(errOut, "refused") {
		t.Errorf("the guest's error for a denied host says %q", errOut)
	}
	t.Logf("a denied connection failed in the guest after %d ms (curl, including its start)", ms)
	if denied.conns.Load() != 0 {
		t.Errorf("the denied host got %d connections", denied.conns.Load())
	}

	// Every other route to the host's services is closed.
	var routes []string
	for _, a := range append([]string{"192.168.127.1", "10.0.2.2", "10.0.2.3", "127.0.0.1", "169.254.169.254", "100.100.100.100", "172.17.0.1", "192.168.1.1", "198.18.0.1", "0.0.0.0"}, hostAddrs(t)...) {
		routes = append(routes, fmt.Sprintf("http://%s:%d/", urlHost(a), private.port))
	}
	routes = append(routes, fmt.Sprintf("http://private.test:%d/", private.port), fmt.Sprintf("http://[::1]:%d/", private.port), fmt.Sprintf("http://localhost:%d/", private.port))
	var script strings.Builder
	for _, u := range routes {
		fmt.Fprintf(&script, "curl -s -o /dev/null -m 3 %s && echo REACHED %s\n", u, u)
	}
	script.WriteString(fmt.Sprintf(`python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b"udp from the guest", (h, %d)) for h in ("192.168.127.1", "10.0.2.2", "127.0.0.1")]'`+"\n", udp.LocalAddr().(*net.UDPAddr).Port))
	script.WriteString("true\n")
	if out, errOut, _ := w.guestSh(id, script.String()); strings.Contains(out, "REACHED") {
		t.Errorf("the guest reached the host's loopback service:\n%s%s", out, errOut)
	}
	if n := private.conns.Load(); n != 0 {
		t.Errorf("the host's loopback service got %d connections from the guest", n)
	}
	select {
	case got := <-udpGot:
		t.Errorf("a UDP datagram from the guest reached the host's loopback: %q", got)
	case <-time.After(time.Second):
	}

	// The denial is in the log and in `sandbar net`.
	target := fmt.Sprintf("denied.test:%d", denied.port)
	var sys string
	if !waitUntil(time.Minute, 200*time.Millisecond, func() bool {
		// Sandbar's own lines are on stderr.
		_, sys, _ = w.run("", "logs", id)
		return strings.Contains(sys, "network: denied "+target) && strings.Contains(sys, "sandbar net "+id[:6]+" allow "+target)
	}) {
		t.Fatalf("no denial of %s in the session's log:\n%s", target, sys)
	}
	var attempts []struct {
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason"`
		Count   int    `json:"count"`
	}
	if !waitUntil(10*time.Second, 200*time.Millisecond, func() bool {
		if err := json.Unmarshal([]byte(w.ok("net", id, "--json")), &attempts); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, a := range attempts {
			if a.Host == "denied.test" && a.Port == denied.port && !a.Allowed && a.Reason != "" {
				found = true
			}
		}
		return found
	}) {
		t.Fatalf("sandbar net does not list the denied attempt: %+v", attempts)
	}
	if table := w.ok("net", id); !strings.Contains(table, target) || !strings.Contains(table, "denied") || !strings.Contains(table, "sandbar net "+id+" allow ") {
		t.Errorf("sandbar net:\n%s", table)
	}

	// Allowed for this session: it works at once, no restart.
	if out := w.ok("net", id, "allow", target); !strings.Contains(out, "allow "+target) {
		t.Errorf("net allow says %q", out)
	}
	if out, errOut, code := w.guestSh(id, fmt.Sprintf("curl -sS -m 20 http://denied.test:%d/", denied.port)); code != 0 || out != "hello from the denied host" {
		t.Errorf("after allow for this session: %q %q exit %d", out, errOut, code)
	}

	// Published ports: a server on every interface, one on loopback
	// only, and one whose number is taken on the host. Each gets a host
	// port of the kernel's choosing, never its own number.
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	node := func(host string, port int, body string) string {
		return fmt.Sprintf(`setsid node -e 'require("http").createServer((q,s)=>s.end(%q)).listen(%d,%q)' </dev/null >/dev/null 2>&1 &`, body, port, host)
	}
	if out, errOut, code := w.guestSh(id, node("0.0.0.0", 5173, "vite on every interface")+node("127.0.0.1", 5174, "loopback only")+node("0.0.0.0", takenPort, "taken on the host")); code != 0 {
		t.Fatalf("start node servers: %s %s", out, errOut)
	}
	want := map[int]string{5173: "vite on every interface", 5174: "loopback only", takenPort: "taken on the host"}
	published := map[int]int{}
	if !waitUntil(60*time.Second, 300*time.Millisecond, func() bool {
		var ports []struct{ Guest, Host int }
		if err := json.Unmarshal([]byte(w.ok("ports", id, "--json")), &ports); err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			published[p.Guest] = p.Host
		}
		return len(published) >= len(want)
	}) {
		t.Fatalf("published after 60 s: %v; want guest ports 5173, 5174 and %d", published, takenPort)
	}
	for guest, body := range want {
		host := published[guest]
		if host == guest {
			t.Errorf("guest port %d was published on the host's port of the same number", guest)
		}
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(host) + "/")
		if err != nil {
			t.Errorf("guest port %d at 127.0.0.1:%d: %v", guest, host, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != body {
			t.Errorf("guest port %d at 127.0.0.1:%d answered %q, want %q", guest, host, b, body)
		}
	}
	if list := w.ok("ports", id); !strings.Contains(list, fmt.Sprintf("127.0.0.1:%d → 5173", published[5173])) {
		t.Errorf("sandbar ports:\n%s", list)
	}
	// Asking for a host port another program holds says so.
	if _, errOut, code := w.run("", "ports", id, "publish", fmt.Sprintf("8080:%d", takenPort)); code == 0 || !strings.Contains(errOut, "taken by another program") {
		t.Errorf("publish on a taken host port: exit %d: %s", code, errOut)
	}

	w.ok("stop", id)
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(published[5173]), time.Second); err == nil {
		c.Close()
		t.Errorf("127.0.0.1:%d still accepts after the session stopped", published[5173])
	}

	// Bad input changes nothing: a malformed .sandbar/network is refused
	// as a whole even once trusted, naming the line (a session would
	// start without it); an unknown secret in a project's list is
	// refused and the list stays as it was.
	os.MkdirAll(filepath.Join(w.repo, ".sandbar"), 0o755)
	os.WriteFile(filepath.Join(w.repo, ".sandbar", "network"), []byte("allow example.com\nallow exa mple.com\n"), 0o644)
	if out, errOut, code := w.run("", "project", "trust", "--yes", w.repo); code != 0 || !strings.Contains(out, "still refused as a whole") || !strings.Contains(out, "line 2") || !strings.Contains(out, ".sandbar/network") {
		t.Errorf("trust of a malformed .sandbar/network: exit %d: %s%s", code, out, errOut)
	}
	os.RemoveAll(filepath.Join(w.repo, ".sandbar"))
	if _, errOut, code := w.run("", "project", "secrets", w.repo, "NO_SUCH_SECRET"); code == 0 || !strings.Contains(errOut, "no secret named NO_SUCH_SECRET") {
		t.Errorf("an unknown secret in the project's list: exit %d: %s", code, errOut)
	}
	if out := w.ok("project", "secrets", w.repo); !strings.Contains(out, "no secret but the model API") {
		t.Errorf("the project's secrets after a refused change: %s", out)
	}
	if _, errOut, code := w.run("mode sideways\n", "net", "rules", "--set", "-"); code == 0 || !strings.Contains(errOut, "line 1") {
		t.Errorf("malformed Sandbar rules: exit %d: %s", code, errOut)
	}
	if got := w.ok("net", "rules"); got != rules {
		t.Errorf("Sandbar's rules after a refused change:\n%s\nwant\n%s", got, rules)
	}
}

// testTLS makes a CA and a certificate for host signed by it: the git
// host's, which the engine trusts through SSL_CERT_FILE as it would a
// public CA.
func testTLS(t *testing.T, host string) (caPEM []byte, cert tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test upstream CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestBrokeredGitPush: a token bound to a git host never enters the VM,
// yet `git push` over HTTPS from the session works. The VM holds a
// stand-in; Sandbar's broker, trusted by the guest through Sandbar's CA,
// swaps the real token into the requests to that host alone, and the
// host (git http-backend over TLS on the host's loopback, reached by a
// name Sandbar's settings map and allow for reads only) sees only the
// real one, and takes the push.
func TestBrokeredGitPush(t *testing.T) {
	w := newWorld(t)
	const host, token = "git.test", "ghp_e2eRealToken0123456789abcdefXYZ"
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	served := filepath.Join(root, "served")
	os.MkdirAll(served, 0o755)
	for _, args := range [][]string{{"init", "-q", "--bare", served + "/up.git"}, {"-C", served + "/up.git", "config", "http.receivepack", "true"}} {
		if out, err := exec.Command(gitPath, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + served, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	var authorized, refused atomic.Int64
	caPEM, cert := testTLS(t, host)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			refused.Add(1)
			rw.Header().Set("WWW-Authenticate", `Basic realm="git.test"`)
			http.Error(rw, "authentication required", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		if len(r.TransferEncoding) > 0 { // net/http/cgi wants a length
			body, _ := io.ReadAll(r.Body)
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		backend.ServeHTTP(rw, r)
	})}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	caFile := filepath.Join(root, "upstream-ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)
	w.env = append(w.env, "SSL_CERT_FILE="+caFile)

	// The host is allowed for reads only, as the default allowlist's
	// code hosts are: the brokered token still gets its writes (the
	// person gave it for that), so the push below lands.
	if out, errOut, code := w.run(fmt.Sprintf("host %s 127.0.0.1\nallow %s:%d read\n", host, host, port), "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules: %s %s", out, errOut)
	}
	if out, errOut, code := w.run(token+"\n", "secrets", "set", "--host", fmt.Sprintf("%s:%d", host, port), "GITHUB_TOKEN"); code != 0 || !strings.Contains(out, "brokered") {
		t.Fatalf("secrets set --host: %q %s", out, errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "GITHUB_TOKEN")
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "2", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")

	push := fmt.Sprintf(`cd /workspace && echo pushed > pushed.txt && git add pushed.txt && git commit -qm "from the VM" &&
git -c credential.helper='!f() { echo username=x-access-token; echo "password=$GITHUB_TOKEN"; }; f' push -q https://%s:%d/up.git HEAD:refs/heads/from-vm && echo PUSHED`, host, port)
	out, errOut, code := w.guestSh(id, push)
	if code != 0 || !strings.Contains(out, "PUSHED") {
		t.Fatalf("git push from the VM: exit %d\n%s\n%s", code, out, errOut)
	}
	if authorized.Load() == 0 {
		t.Error("the git host never saw the real token")
	}
	got, err := exec.Command(gitPath, "-C", served+"/up.git", "log", "-1", "--format=%s", "from-vm").CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "from the VM" {
		t.Errorf("the pushed branch on the git host: %q %v", got, err)
	}
	environ, _, _ := w.run("", "exec", "--user", "root", id, "--", "sh", "-c", `for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; done 2>/dev/null`)
	if strings.Contains(environ, token) || strings.Contains(environ, "redacted:GITHUB_TOKEN") || !strings.Contains(environ, "GITHUB_TOKEN=sandbar-brokered-") {
		t.Errorf("the guest's environments hold the token, or no stand-in:\n%s", clip(environ))
	}
	// The stand-in sent anywhere else is worthless: the broker swaps only
	// toward the bound host.
	if n, err := countInFile(filepath.Join(w.home, "sessions", id, "scratch.img"), []byte(token)); err != nil || n > 0 {
		t.Errorf("the session's disk holds the token %d times (%v)", n, err)
	}
}
