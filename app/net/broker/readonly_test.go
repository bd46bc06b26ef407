package broker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sandbar/app/net/broker"
)

// readOnlyHost is an upstream (TLS with a CA of its own, or plain HTTP)
// behind a read-only Interceptor on a loopback listener.
type readOnlyHost struct {
	host     string
	addr     string // where the guest connects
	caPEM    []byte // Sandbar's CA, which the guest trusts
	guestCAs *x509.CertPool
	refused  chan broker.RequestInfo
	upAddr   string         // the upstream itself, for a direct client
	upRoots  *x509.CertPool // what verifies it
}

func readOnly(t testing.TB, host string, plain bool, upstream http.Handler, creds []broker.Credential) *readOnlyHost {
	t.Helper()
	ctx := context.Background()
	up := httptest.NewUnstartedServer(upstream)
	var upRoots *x509.CertPool
	if plain {
		up.Start()
	} else {
		world, err := broker.LoadOrCreateCA(ctx, newMemStore())
		if err != nil {
			t.Fatal(err)
		}
		cert, err := world.Certificate(host)
		if err != nil {
			t.Fatal(err)
		}
		up.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		up.StartTLS()
		upRoots = x509.NewCertPool()
		upRoots.AppendCertsFromPEM(world.CertPEM())
	}
	t.Cleanup(up.Close)
	ca, err := broker.LoadOrCreateCA(ctx, newMemStore())
	if err != nil {
		t.Fatal(err)
	}
	h := &readOnlyHost{host: host, caPEM: ca.CertPEM(), guestCAs: x509.NewCertPool(), refused: make(chan broker.RequestInfo, 64),
		upAddr: up.Listener.Addr().String(), upRoots: upRoots}
	h.guestCAs.AppendCertsFromPEM(ca.CertPEM())
	i := &broker.Interceptor{CA: ca, Credentials: creds, RootCAs: upRoots}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	_, port, _ := net.SplitHostPort(h.addr)
	p, _ := net.LookupPort("tcp", port)
	target := broker.Target{
		Host: host, Port: uint16(p), ReadOnly: true,
		HowToAllow: "sandbar net test allow " + host + " write",
		OnRefused:  func(info broker.RequestInfo) { h.refused <- info },
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", up.Listener.Addr().String())
		},
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { i.Serve(sctx, c, target) })
		}
	})
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	return h
}

func (h *readOnlyHost) client(t testing.TB, h2 bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: h.guestCAs},
		ForceAttemptHTTP2: h2,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", h.addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestIsRead(t *testing.T) {
	const gitCT, lfsCT = "application/x-git-upload-pack-request", "application/vnd.git-lfs+json; charset=utf-8"
	for _, tc := range []struct {
		method, target, body string
		read                 bool
		contentType          string
		header               string
	}{
		{"GET", "/lodash", "", true, "", ""},
		{"HEAD", "/lodash/-/lodash-4.17.21.tgz", "", true, "", ""},
		{"OPTIONS", "/", "", true, "", ""},
		{"GET", "/o/r.git/info/refs?service=git-upload-pack", "", true, "", ""},
		{"GET", "/o/r.git/info/refs?service=git-receive-pack", "", false, "", ""},
		{"POST", "/o/r.git/git-upload-pack", "0000", true, gitCT, ""},
		{"POST", "/o/r/git-upload-pack", "0000", true, gitCT, ""},
		// A REST route that ends with a name the agent chose writes: it
		// is not git's fetch (a hostile review's finding).
		{"POST", "/api/v4/projects/1/repository/files/git-upload-pack", "branch=main&content=eA&commit_message=x", false, "application/x-www-form-urlencoded", ""},
		{"POST", "/api/v4/projects/1/repository/files/git-upload-pack", "0000", false, gitCT, ""},
		{"POST", "/api/v4/projects/1/repository/files/docs%2Fgit-upload-pack", "0000", false, gitCT, ""},
		{"POST", "/o/r/-/files/git-upload-pack", "0000", false, gitCT, ""},
		{"POST", "/o/r.git/git-upload-pack?branch=main&content=eA&commit_message=x", "0000", false, gitCT, ""},
		{"POST", "/o/r.git/git-upload-pack", "0000", false, "application/json", ""},
		{"POST", "/o/r.git/git-upload-pack", "0000", false, "", ""},
		{"POST", "/o/r.git/git-upload-pack", "0000", false, gitCT, "X-HTTP-Method-Override"},
		{"GET", "/o/r.git", "", false, "", "X-HTTP-Method-Override"},
		{"POST", "/o/r.git/git-receive-pack", "0000", false, gitCT, ""},
		{"POST", "/-/npm/v1/security/advisories/bulk", "{}", true, "", ""},
		{"POST", "/-/npm/v1/security/audits/quick", "{}", true, "", ""},
		{"POST", "/x/-/npm/v1/security/advisories/bulk", "{}", false, "", ""},
		{"PUT", "/my-package", "{}", false, "", ""},
		{"DELETE", "/my-package/-rev/1", "", false, "", ""},
		{"PATCH", "/api/v1/crates", "", false, "", ""},
		{"POST", "/api/v1/gems", "gem", false, "", ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"download","objects":[{"oid":"ab","size":1}]}`, true, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"download","objects":[{"oid":"ab","size":1}]}`, false, "application/json", ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"upload","Operation":"download"}`, false, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"Operation":"download"}`, false, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"upload","objects":[{"oid":"ab","size":1}]}`, false, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"download","operation":"upload"}`, false, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `not json`, false, lfsCT, ""},
		{"POST", "/o/r.git/info/lfs/objects/batch", `{"operation":"download","pad":"` + strings.Repeat("a", 1<<20) + `"}`, false, lfsCT, ""},
	} {
		r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		if tc.header != "" {
			r.Header.Set(tc.header, "PUT")
		}
		read, what := broker.IsRead(r)
		if read != tc.read {
			t.Errorf("%s %s: read %v (%s), want %v", tc.method, tc.target, read, what, tc.read)
		}
		if !read && what == "" {
			t.Errorf("%s %s: refused without saying what it is", tc.method, tc.target)
		}
		if read && len(tc.body) > 0 {
			// What IsRead read of the body is there for the upstream.
			if b, _ := io.ReadAll(r.Body); string(b) != tc.body {
				t.Errorf("%s %s: the body left is %q, want %q", tc.method, tc.target, b, tc.body)
			}
		}
	}
}

// TestReadOnlyHTTP: through a read-only interceptor, over TLS (HTTP/1.1,
// also for a client that offers HTTP/2: see guestALPN) and plain HTTP, a
// GET streams a large body whole, and a PUT never reaches the upstream:
// the guest gets 403 with what to do.
func TestReadOnlyHTTP(t *testing.T) {
	blob := make([]byte, 8<<20)
	rand.Read(blob)
	sum := sha256.Sum256(blob)
	var mu sync.Mutex
	var puts int
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PUT" {
			mu.Lock()
			puts++
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(blob)
	})
	for _, tc := range []struct {
		name   string
		plain  bool
		h2     bool
		scheme string
		proto  int
	}{
		{"https, HTTP/1.1", false, false, "https", 1},
		{"https, HTTP/2 offered", false, true, "https", 1},
		{"plain HTTP", true, false, "http", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := readOnly(t, "registry.test", tc.plain, up, nil)
			c := h.client(t, tc.h2)
			resp, err := c.Get(tc.scheme + "://registry.test/pkg.tgz")
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || sha256.Sum256(got) != sum || resp.StatusCode != 200 {
				t.Fatalf("GET: status %d, %d bytes, err %v; want 200 and the %d bytes sent", resp.StatusCode, len(got), err, len(blob))
			}
			if resp.ProtoMajor != tc.proto {
				t.Errorf("the guest spoke HTTP/%d, want HTTP/%d", resp.ProtoMajor, tc.proto)
			}
			req, _ := http.NewRequest("PUT", tc.scheme+"://registry.test/my-package", strings.NewReader(`{"name":"my-package"}`))
			resp, err = c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "Sandbar: writes are not allowed to registry.test from this session (PUT request: PUT /my-package)"
			if resp.StatusCode != 403 || !strings.Contains(string(body), want) || !strings.Contains(string(body), "sandbar net test allow registry.test write") {
				t.Errorf("PUT: status %d, body %q; want 403 saying %q and how to allow writes", resp.StatusCode, body, want)
			}
			info := <-h.refused
			if info.Method != "PUT" || info.Path != "/my-package" || info.Host != "registry.test" || !info.Refused {
				t.Errorf("refused write reported as %+v", info)
			}
		})
	}
	if puts != 0 {
		t.Errorf("%d PUTs reached the upstream", puts)
	}
}

// TestReadOnlyGit: the real git CLI clones and fetches through a
// read-only interceptor, over HTTPS and plain HTTP, and its push is
// refused at discovery with Sandbar's words in git's own error.
func TestReadOnlyGit(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	}
	git := func(wd string, args ...string) (string, error) {
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = wd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(wd string, args ...string) string {
		t.Helper()
		out, err := git(wd, args...)
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	root := filepath.Join(dir, "served")
	os.MkdirAll(root, 0o755)
	must(root, "init", "-q", "--bare", "-b", "main", "repo.git")
	must(filepath.Join(root, "repo.git"), "config", "http.receivepack", "true")
	seed := filepath.Join(dir, "seed")
	must(dir, "clone", "-q", filepath.Join(root, "repo.git"), seed)
	os.WriteFile(filepath.Join(seed, "README"), []byte("hello\n"), 0o644)
	must(seed, "add", ".")
	must(seed, "commit", "-q", "-m", "first")
	must(seed, "push", "-q", "origin", "HEAD:main")
	upHead := must(filepath.Join(root, "repo.git"), "rev-parse", "main")

	backend := &cgi.Handler{
		Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"},
	}
	var pushes sync.Mutex
	pushed := 0
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			pushes.Lock()
			pushed++
			pushes.Unlock()
		}
		if len(r.TransferEncoding) > 0 {
			// net/http/cgi refuses chunked bodies; a real git server takes them.
			body, _ := io.ReadAll(r.Body)
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		backend.ServeHTTP(w, r)
	})
	for _, plain := range []bool{false, true} {
		scheme := map[bool]string{false: "https", true: "http"}[plain]
		t.Run(scheme, func(t *testing.T) {
			h := readOnly(t, "git.test", plain, up, nil)
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			os.WriteFile(caFile, h.caPEM, 0o644)
			_, port, _ := net.SplitHostPort(h.addr)
			u := (&url.URL{Scheme: scheme, Host: "git.test:" + port, Path: "/repo.git"}).String()
			cfg := []string{"-c", "http.sslCAInfo=" + caFile, "-c", "http.curloptResolve=git.test:" + port + ":127.0.0.1"}
			work := filepath.Join(t.TempDir(), "work")
			must(dir, append(cfg, "clone", "-q", u, work)...)
			if got := must(work, "rev-parse", "HEAD"); got != upHead {
				t.Fatalf("the clone's HEAD is %s, want %s", got, upHead)
			}
			must(work, append(cfg, "fetch", "-q", "origin")...)
			os.WriteFile(filepath.Join(work, "new"), []byte("agent's\n"), 0o644)
			must(work, "add", ".")
			must(work, "commit", "-q", "-m", "agent's commit")
			out, err := git(work, append(cfg, "push", "origin", "HEAD:main")...)
			if err == nil {
				t.Fatalf("the push went through:\n%s", out)
			}
			for _, want := range []string{"remote: Sandbar: writes are not allowed to git.test", "git push", "sandbar net test allow git.test write"} {
				if !strings.Contains(out, want) {
					t.Errorf("git's error does not say %q:\n%s", want, out)
				}
			}
			if info := <-h.refused; info.What != "git push" {
				t.Errorf("refused write reported as %+v", info)
			}
		})
	}
	if got := must(filepath.Join(root, "repo.git"), "rev-parse", "main"); got != upHead || pushed != 0 {
		t.Errorf("upstream main is %s after refused pushes (want %s); %d push requests reached it", got, upHead, pushed)
	}
}
