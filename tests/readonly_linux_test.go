//go:build linux

package tests

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadOnlyRegistries (issue 21, finding 7): a host allowed for reads
// only, as the default allowlist's registries and code hosts are, lets a
// session's VM clone and install, and refuses its push and publish, made
// with the agent's own token, with a clear 403 and a denied-write entry;
// "sandbar net ID allow HOST write" lets the push through. The hosts are
// real servers on the host's loopback, mapped in by host lines and
// allowed with "read" in Sandbar's settings, as the defaults allow theirs:
// git http-backend over HTTPS (Sandbar's CA in the guest, the broker's
// TLS interception) and an npm-style registry over plain HTTP.
func TestReadOnlyRegistries(t *testing.T) {
	w := newWorld(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()

	// The git host: git http-backend behind TLS, pushes counted.
	served := filepath.Join(root, "served")
	os.MkdirAll(served, 0o755)
	seed := filepath.Join(root, "seed")
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", served + "/up.git"},
		{"-C", served + "/up.git", "config", "http.receivepack", "true"},
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "upstream's first"},
		{"-C", seed, "push", "-q", served + "/up.git", "main"},
	} {
		if out, err := exec.Command(gitPath, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + served, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}}
	var pushRequests atomic.Int64
	const gitHost = "forge.test"
	caPEM, cert := testTLS(t, gitHost)
	gitLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gitSrv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			pushRequests.Add(1)
		}
		if len(r.TransferEncoding) > 0 { // net/http/cgi wants a length
			body, _ := io.ReadAll(r.Body)
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		backend.ServeHTTP(rw, r)
	})}
	go gitSrv.ServeTLS(gitLn, "", "")
	defer gitSrv.Close()
	gitPort := gitLn.Addr().(*net.TCPAddr).Port
	caFile := filepath.Join(root, "upstream-ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)
	w.env = append(w.env, "SSL_CERT_FILE="+caFile, "SANDBAR_DEBUG=1")
	engineLog := func() string {
		b, _ := os.ReadFile(filepath.Join(w.home, "engine.log"))
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "intercepted connection") || strings.Contains(l, gitHost) || strings.Contains(l, "registry.test") {
				keep = append(keep, l)
			}
		}
		return clip(strings.Join(keep, "\n"))
	}

	// The npm-style registry, over plain HTTP.
	const npmHost = "registry.test"
	npmLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	npmPort := npmLn.Addr().(*net.TCPAddr).Port
	reg := newTestRegistry(t, fmt.Sprintf("http://%s:%d", npmHost, npmPort))
	npmSrv := &http.Server{Handler: reg}
	go npmSrv.Serve(npmLn)
	defer npmSrv.Close()

	rules := fmt.Sprintf("host %s 127.0.0.1\nhost %s 127.0.0.1\nallow %s:%d read\nallow %s:%d read\n",
		gitHost, npmHost, gitHost, gitPort, npmHost, npmPort)
	if out, errOut, code := w.run(rules, "net", "rules", "--set", "-"); code != 0 {
		t.Fatalf("net rules --set: %s %s", out, errOut)
	}
	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--cpus", "2", "--memory", "1024", "--disk", "1")
	w.waitState(id, "running")

	// git: clone and fetch work; the push is refused with Sandbar's words
	// in git's own error, and reaches nothing.
	gitURL := fmt.Sprintf("https://%s:%d/up.git", gitHost, gitPort)
	out, errOut, code := w.guestSh(id, fmt.Sprintf(`set -e; cd /tmp && git clone -q %s c && cd c && git fetch -q origin && git log -1 --format=%%s`, gitURL))
	if code != 0 || strings.TrimSpace(out) != "upstream's first" {
		t.Fatalf("git clone from the read-only host: exit %d\n%s\n%s\nthe engine's log:\n%s", code, out, errOut, engineLog())
	}
	const push = `cd /tmp/c && echo agent > agent.txt && git add agent.txt && git -c user.name=A -c user.email=a@example.com commit -qm "the agent's" &&
git -c credential.helper='!f() { echo username=agent; echo password=agents-own-token; }; f' push origin HEAD:refs/heads/from-vm`
	out, errOut, code = w.guestSh(id, push)
	if code == 0 {
		t.Fatalf("git push to the read-only host went through:\n%s\n%s", out, errOut)
	}
	for _, want := range []string{
		"remote: Sandbar: writes are not allowed to " + gitHost,
		fmt.Sprintf("sandbar net %s allow %s:%d write", id[:6], gitHost, gitPort),
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("git's error does not say %q:\n%s", want, errOut)
		}
	}
	if n := pushRequests.Load(); n != 0 {
		t.Errorf("%d push requests reached the git host", n)
	}

	// The refused write is a denied entry, with method and path.
	type attempt struct {
		Proto   string `json:"proto"`
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Allowed bool   `json:"allowed"`
		Reason  string `json:"reason"`
	}
	findWrite := func(host, reason string) bool {
		var as []attempt
		if err := json.Unmarshal([]byte(w.ok("net", id, "--json")), &as); err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.Proto == "http" && a.Host == host && !a.Allowed && strings.Contains(a.Reason, reason) &&
				strings.Contains(a.Reason, "writes are not allowed to this host: allow writes for this session") {
				return true
			}
		}
		return false
	}
	if !waitUntil(15*time.Second, 200*time.Millisecond, func() bool {
		return findWrite(gitHost, "/up.git/info/refs (git push)")
	}) {
		t.Errorf("no refused write to %s in `sandbar net %s`:\n%s", gitHost, id, w.ok("net", id))
	}
	if table := w.ok("net", id); !strings.Contains(table, "refused") || !strings.Contains(table, fmt.Sprintf("%s:%d (write)", gitHost, gitPort)) {
		t.Errorf("`sandbar net %s` does not list the refused write:\n%s", id, table)
	}

	// Allow writes for this session: the same push goes through.
	if out := w.ok("net", id, "allow", fmt.Sprintf("%s:%d", gitHost, gitPort), "write"); !strings.Contains(out, "write") {
		t.Errorf("net allow ... write said %q", out)
	}
	// With writes allowed the connection is no longer read, so it is the
	// git host's own certificate the guest sees: trust the test's CA as
	// a real host's is trusted.
	trust := fmt.Sprintf("cat /etc/ssl/certs/ca-certificates.crt - > /tmp/bundle.pem <<'EOF'\n%sEOF\n", caPEM)
	out, errOut, code = w.guestSh(id, trust+`cd /tmp/c && GIT_SSL_CAINFO=/tmp/bundle.pem git -c credential.helper='!f() { echo username=agent; echo password=agents-own-token; }; f' push -q origin HEAD:refs/heads/from-vm && echo PUSHED`)
	if code != 0 || !strings.Contains(out, "PUSHED") {
		t.Fatalf("git push after allowing writes: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, err := exec.Command(gitPath, "-C", served+"/up.git", "log", "-1", "--format=%s", "from-vm").CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "the agent's" {
		t.Errorf("the pushed branch on the git host: %q %v", got, err)
	}

	// npm: the real npm client (the host's, served to the VM, whose image
	// has node but no npm) installs from the registry, and its publish is
	// refused before it reaches the registry.
	if reg.npm == nil {
		t.Skip("npm is not installed on this machine: the test serves the host's npm to the VM")
	}
	reg.auditSeen.Store(false)
	npmURL := fmt.Sprintf("http://%s:%d/", npmHost, npmPort)
	install := fmt.Sprintf(`set -e; mkdir -p /tmp/npm /tmp/app && cd /tmp/npm && curl -sSf -m 60 %s-/test/npm.tgz | tar xz
cd /tmp/app && echo '{"name":"app","version":"1.0.0"}' > package.json
node /tmp/npm/bin/npm-cli.js install --registry %s --no-fund --loglevel=error ro-left-pad 2>&1 | grep -v 'does not support Node.js' || true
node -e 'console.log(require("ro-left-pad")("x", 4))'`, npmURL, npmURL)
	out, errOut, code = w.guestSh(id, install)
	if code != 0 || !strings.Contains(out, "   x") {
		t.Fatalf("npm install from the read-only registry: exit %d\n%s\n%s\nthe engine's log:\n%s", code, out, errOut, engineLog())
	}
	if !reg.auditSeen.Load() {
		t.Errorf("npm's audit (a POST the read-only rule lets through) did not reach the registry:\n%s", out)
	}
	publish := fmt.Sprintf(`mkdir -p /tmp/pub && cd /tmp/pub && echo '{"name":"agent-exfil","version":"1.0.0"}' > package.json && echo 'the repository' > index.js &&
printf '//%s:%d/:_authToken=agents-own-token\n' > .npmrc &&
node /tmp/npm/bin/npm-cli.js publish --registry %s 2>&1; echo "exit=$?"`, npmHost, npmPort, npmURL)
	out, errOut, _ = w.guestSh(id, publish)
	if strings.Contains(out, "exit=0") || !strings.Contains(out, "403") {
		t.Errorf("npm publish to the read-only registry: want a 403 failure\n%s\n%s", out, errOut)
	}
	if n := reg.puts.Load(); n != 0 {
		t.Errorf("%d publishes reached the registry", n)
	}
	if !waitUntil(15*time.Second, 200*time.Millisecond, func() bool { return findWrite(npmHost, "PUT /agent-exfil") }) {
		t.Errorf("no refused write to %s in `sandbar net %s`:\n%s", npmHost, id, w.ok("net", id))
	}
}

// testRegistry is an npm-style registry: one package's metadata and
// tarball, npm's audit endpoint, PUT to publish (counted), and the host's
// npm client as a tarball for the VM.
type testRegistry struct {
	base      string
	meta      []byte
	tgz       []byte
	npm       []byte // the host's npm, gzipped tar; nil when there is none
	puts      atomic.Int64
	auditSeen atomic.Bool
}

func newTestRegistry(t *testing.T, base string) *testRegistry {
	t.Helper()
	r := &testRegistry{base: base}
	r.tgz = tarGz(t, map[string]string{
		"package/package.json": `{"name":"ro-left-pad","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = (s, n) => ' '.repeat(Math.max(0, n - s.length)) + s\n",
	})
	sha := sha1.Sum(r.tgz)
	sri := sha512.Sum512(r.tgz)
	meta := map[string]any{
		"name":      "ro-left-pad",
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "ro-left-pad", "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   base + "/ro-left-pad/-/ro-left-pad-1.0.0.tgz",
				"shasum":    hex.EncodeToString(sha[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sri[:]),
			},
		}},
	}
	r.meta, _ = json.Marshal(meta)
	if p, err := exec.LookPath("npm"); err == nil {
		if cli, err := filepath.EvalSymlinks(p); err == nil {
			dir := filepath.Dir(filepath.Dir(cli)) // .../npm/bin/npm-cli.js
			if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
				r.npm = tarGzDir(t, dir)
			}
		}
	}
	return r
}

func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodPut:
		r.puts.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"ok":true}`)
	case req.Method == http.MethodPost && strings.HasPrefix(req.URL.Path, "/-/npm/v1/security/"):
		r.auditSeen.Store(true)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	case req.URL.Path == "/ro-left-pad":
		w.Header().Set("Content-Type", "application/json")
		w.Write(r.meta)
	case req.URL.Path == "/ro-left-pad/-/ro-left-pad-1.0.0.tgz":
		w.Write(r.tgz)
	case req.URL.Path == "/-/test/npm.tgz" && r.npm != nil:
		w.Write(r.npm)
	default:
		http.NotFound(w, req)
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		io.WriteString(tw, body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// tarGzDir packs dir's files (not its docs and man pages) as a gzipped
// tar with paths relative to dir.
func tarGzDir(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == "docs" || rel == "man") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tw.WriteHeader(&tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), Size: int64(len(b)), Typeflag: tar.TypeReg})
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatalf("pack the host's npm: %v", err)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}
