// Package registrytest starts a real docker-registry (distribution,
// Debian's package) on loopback for the environment packages' tests,
// and pushes what a test builds to it. It is for tests only.
package registrytest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is a real docker-registry (distribution 2.8, Debian's
// package) on 127.0.0.1, behind a counting proxy so that tests can tell
// how many blobs a pull fetched.
type Registry struct {
	Host      string // the proxy's host:port, what references name
	user, pwd string // set when it wants basic auth
	// BlobGets counts the blob downloads it served.
	BlobGets atomic.Int64
}

// NeedTool returns tool's path, or skips the test saying what to install;
// under CI (CI set, as GitHub Actions sets it) a missing tool fails.
func NeedTool(t testing.TB, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed: apt-get install %s (scripts/install-deps.sh does)", tool, pkg)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts docker-registry with its storage in a temp dir;
// with a user, it wants basic auth (htpasswd, bcrypt).
func Start(t testing.TB, user, pwd string) *Registry {
	t.Helper()
	bin := NeedTool(t, "docker-registry", "docker-registry")
	dir := t.TempDir()
	addr := FreeAddr(t)
	auth := ""
	if user != "" {
		htpasswd := NeedTool(t, "htpasswd", "apache2-utils")
		out, err := exec.Command(htpasswd, "-Bbn", user, pwd).Output()
		if err != nil {
			t.Fatalf("htpasswd: %v", err)
		}
		hp := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(hp, bytes.TrimSpace(out), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: sandbar-test\n    path: %s\n", hp)
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "data"), addr, auth)
	cp := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cp, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Ready when it logs that it listens: wait on that line, not a timer.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cp)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	pw.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	listening := make(chan struct{})
	var logb strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "listening on") {
				seen = true
				close(listening)
			}
			if logb.Len() < 64<<10 {
				logb.WriteString(sc.Text() + "\n")
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		pr.Close()
		<-logDone
	})
	select {
	case <-listening:
	case <-exited:
		<-logDone
		t.Fatalf("docker-registry exited: %s", logb.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("docker-registry did not say it listens on %s within 30s", addr)
	}

	r := &Registry{user: user, pwd: pwd}
	target := &url.URL{Scheme: "http", Host: addr}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			r.BlobGets.Add(1)
		}
		// What a registry says to an account it knows but will not serve;
		// distribution's htpasswd auth has no such accounts.
		if strings.Contains(req.URL.Path, "/forbidden/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`)
			return
		}
		proxy.ServeHTTP(w, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.Host = ln.Addr().String()

	return r
}

// FreeAddr is a loopback address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Ref is repoTag in the registry.
func (r *Registry) Ref(t testing.TB, repoTag string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(r.Host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// Auth is the registry's credentials for go-containerregistry.
func (r *Registry) Auth() remote.Option {
	if r.user == "" {
		return remote.WithAuth(authn.Anonymous)
	}
	return remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pwd})
}

// Push writes img (or an index) as repoTag and returns the reference.
func (r *Registry) Push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref := r.Ref(t, repoTag)
	if err := remote.Write(ref, img, r.Auth(), remote.WithContext(context.Background())); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}

// PushIndex writes idx as repoTag and returns the reference.
func (r *Registry) PushIndex(t testing.TB, repoTag string, idx v1.ImageIndex) string {
	t.Helper()
	ref := r.Ref(t, repoTag)
	if err := remote.WriteIndex(ref, idx, r.Auth()); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}

// DockerConfig writes a Docker config giving user:pwd for host and
// points DOCKER_CONFIG at it; with no user, an empty config.
func DockerConfig(t *testing.T, host, user, pwd string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := `{"auths":{}}`
	if user != "" {
		cfg = fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, base64.StdEncoding.EncodeToString([]byte(user+":"+pwd)))
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	return dir
}

// PushFeature pushes a devcontainer feature artifact, as the spec's
// features distribution has it, as repoTag: an OCI manifest whose config
// is application/vnd.devcontainers and whose one layer
// (application/vnd.devcontainers.layer.v1+tar) is a plain tar of files
// (name → content; a name ending in ".sh" is executable). It returns the
// reference, the id a devcontainer.json names.
func (r *Registry) PushFeature(t testing.TB, repoTag string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "./" + n, Mode: mode, Size: int64(len(files[n])), ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return r.PushFeatureLayer(t, repoTag, buf.Bytes())
}

// PushFeatureLayer pushes a feature artifact whose layer is data as is.
func (r *Registry) PushFeatureLayer(t testing.TB, repoTag string, data []byte) string {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.devcontainers")
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:       static.NewLayer(data, "application/vnd.devcontainers.layer.v1+tar"),
		Annotations: map[string]string{"org.opencontainers.image.title": "devcontainer-feature.tgz"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.Push(t, repoTag, img)
}

// Platform returns img made a linux/arch image, its config changed by
// edit (nil leaves it as it is).
func Platform(t testing.TB, img v1.Image, arch string, edit func(*v1.Config)) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	if edit != nil {
		edit(&cf.Config)
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
