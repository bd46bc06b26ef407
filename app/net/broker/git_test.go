package broker_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sandbar/app/net/broker"
)

// TestGitPushThroughInterceptor pushes with the real git CLI, which holds
// only the sentinel, to git http-backend behind an upstream that accepts
// only the real token, through Serve.
func TestGitPushThroughInterceptor(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	}
	git := func(wd string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = wd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	root := filepath.Join(dir, "served")
	os.MkdirAll(root, 0o755)
	git(root, "init", "-q", "--bare", "repo.git")
	git(filepath.Join(root, "repo.git"), "config", "http.receivepack", "true")

	gh := credential(t, "GITHUB_TOKEN", "github.test", "Authorization", realGitHub)
	want := basicAuth("x-access-token", realGitHub)
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"},
	}
	var authorized, chunked atomic.Int32
	ic := intercept(t, "github.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="github.test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		if len(r.TransferEncoding) > 0 {
			chunked.Add(1)
			// net/http/cgi refuses chunked bodies; a real git server
			// takes them. Give the CGI a length.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		backend.ServeHTTP(w, r)
	}), []broker.Credential{gh})

	caFile := filepath.Join(dir, "sandbar-ca.pem")
	if err := os.WriteFile(caFile, ic.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	git(work, "init", "-q", "-b", "main")
	// Incompressible and larger than http.postBuffer (1 MiB): git sends
	// the pack as a chunked POST.
	blob := make([]byte, 3<<20)
	rand.Read(blob)
	os.WriteFile(filepath.Join(work, "blob.bin"), blob, 0o644)
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "through the broker")
	head := git(work, "rev-parse", "HEAD")

	port := ic.addr[strings.LastIndex(ic.addr, ":")+1:]
	helper := "!f() { echo username=x-access-token; echo password=" + gh.Sentinel + "; }; f"
	git(work,
		"-c", "credential.helper=",
		"-c", "credential.helper="+helper,
		"-c", "http.sslCAInfo="+caFile,
		"-c", "http.curloptResolve=github.test:"+port+":127.0.0.1",
		"push", "-q", "https://github.test:"+port+"/repo.git", "main")

	if got := git(filepath.Join(root, "repo.git"), "rev-parse", "refs/heads/main"); got != head {
		t.Errorf("upstream main is %s, want %s", got, head)
	}
	if authorized.Load() == 0 {
		t.Error("no request reached the upstream with the real token")
	}
	if chunked.Load() == 0 {
		t.Error("git sent no chunked request: the test did not exercise a chunked upload")
	}
}
