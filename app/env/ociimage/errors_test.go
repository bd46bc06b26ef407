package ociimage

import (
	"sandbar/app/env/internal/regclient"
	"sandbar/tests/registrytest"

	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func randomBody(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return string(b)
}

// wantErr checks err's kind and that its words name each of words.
func wantErr(t *testing.T, what string, err, kind error, words ...string) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	if !errors.Is(err, kind) {
		t.Errorf("%s: %v, want %v", what, err, kind)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestPullPrivate pulls from a registry behind basic auth, with
// credentials from a DOCKER_CONFIG directory, and says what to do when
// they are missing, wrong or not enough.
func TestPullPrivate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "agent", "s3cret-pass")
	img := image(t, runtime.GOARCH, v1.Config{}, layer(t, entry{name: "private", body: "only with credentials\n"}))
	ref := reg.Push(t, "sandbar/private:1", img)
	s := &Store{Dir: t.TempDir()}
	ctx := context.Background()

	dir := dockerConfig(t, reg.Host, "", "")
	_, err := s.Pull(ctx, ref, registryOnly(PullOptions{}))
	wantErr(t, "no credentials", err, ErrUnauthorized,
		"no credentials for "+reg.Host+" in "+filepath.Join(dir, "config.json"), "run `docker login "+reg.Host+"`")

	dockerConfig(t, reg.Host, "agent", "wrong")
	_, err = s.Pull(ctx, ref, registryOnly(PullOptions{}))
	wantErr(t, "wrong password", err, ErrUnauthorized, reg.Host+" refused the credentials", "docker login "+reg.Host)
	if err != nil && strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the password: %q", err)
	}

	_, err = s.Pull(ctx, reg.Host+"/forbidden/x:1", registryOnly(PullOptions{}))
	wantErr(t, "403", err, ErrUnauthorized, "denied access to forbidden/x", "docker login "+reg.Host)
	assertNothingLeft(t, s)

	dockerConfig(t, reg.Host, "agent", "s3cret-pass")
	got, err := s.Pull(ctx, ref, registryOnly(PullOptions{}))
	if err != nil {
		t.Fatalf("pull with credentials: %v", err)
	}
	if c := catFile(t, got.Path, "/private"); c != "only with credentials\n" {
		t.Errorf("/private holds %q", c)
	}
}

// TestPullErrors: each failure a person can act on has its kind and its
// words, and leaves nothing in the store.
func TestPullErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	big := reg.Push(t, "sandbar/big:1", image(t, runtime.GOARCH, v1.Config{}, layer(t, entry{name: "noise", body: randomBody(t, 64<<10)})))
	bomb := reg.Push(t, "sandbar/bomb:1", image(t, runtime.GOARCH, v1.Config{}, layer(t, entry{name: "zeros", body: strings.Repeat("\x00", 4<<20)})))
	s := &Store{Dir: t.TempDir()}
	ctx := context.Background()
	o := registryOnly(PullOptions{})

	_, err := s.Pull(ctx, reg.Host+"/sandbar/big:nope", o)
	wantErr(t, "unknown tag", err, ErrNotFound, reg.Host+" has no image sandbar/big:nope", "check the name and the tag")
	_, err = s.Pull(ctx, reg.Host+"/sandbar/nothing:1", o)
	wantErr(t, "unknown repository", err, ErrNotFound, reg.Host+" has no image sandbar/nothing:1")

	closed := registrytest.FreeAddr(t)
	_, err = s.Pull(ctx, closed+"/sandbar/big:1", o)
	wantErr(t, "unreachable", err, ErrUnreachable, "cannot reach registry "+closed, "connection refused")

	o.MaxBytes = 20_000
	_, err = s.Pull(ctx, big, o)
	wantErr(t, "over the limit", err, ErrTooLarge, big, " kB, over the image size limit of 20.0 kB")
	o.MaxBytes = 1 << 20
	_, err = s.Pull(ctx, bomb, o)
	wantErr(t, "unpacks over the limit", err, ErrTooLarge, bomb, "unpacks to more than the image size limit of 1.0 MB")
	assertNothingLeft(t, s)

	for _, bad := range []string{"Not A Ref", "-oProxyCommand=x", "x@sha256:abc"} {
		if _, err := s.Pull(ctx, bad, o); err == nil || !strings.Contains(err.Error(), "is not an image reference") {
			t.Errorf("pull %q: %v", bad, err)
		}
	}
	if _, err := s.Pull(ctx, big, PullOptions{Platform: "amd64"}); err == nil || !strings.Contains(err.Error(), "os/arch") {
		t.Errorf("pull for platform amd64: %v", err)
	}
	if _, err := (&Store{}).Pull(ctx, big, o); err == nil {
		t.Error("a store without a directory pulled")
	}
}

// TestPullCancelled: a pull whose context ends mid-layer stops with the
// context's error and leaves nothing behind.
func TestPullCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	ref := reg.Push(t, "sandbar/slow:1", image(t, runtime.GOARCH, v1.Config{},
		layer(t, entry{name: "a", body: randomBody(t, 4<<20)}), layer(t, entry{name: "b", body: randomBody(t, 4<<20)})))
	s := &Store{Dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.Pull(ctx, ref, registryOnly(PullOptions{Progress: func(p Progress) {
		if p.BytesDone > 0 {
			cancel()
		}
	}}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled pull returned %v, want context.Canceled", err)
	}
	assertNothingLeft(t, s)
	// The next pull is whole.
	got, err := s.Pull(context.Background(), ref, registryOnly(PullOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if c := catFile(t, got.Path, "/b"); len(c) != 4<<20 {
		t.Errorf("/b is %d bytes after a cancelled pull and a second one, want 4 MiB", len(c))
	}
}

// TestPlainHTTPOnlyOnLoopback: references to loopback registries use
// plain HTTP; the transport refuses it for any other host before dialing.
func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	for ref, insecure := range map[string]bool{
		"127.0.0.1:5000/x:1":  true,
		"localhost:5000/x":    true,
		"[::1]:5000/x":        true,
		"10.0.0.5:5000/x:1":   false,
		"192.168.1.2:5000/x":  false,
		"registry.example/x":  false,
		"127.0.0.1.nip.io/x":  false,
		"docker.io/library/x": false,
	} {
		r, err := parseRef(ref)
		if err != nil {
			t.Fatalf("parse %s: %v", ref, err)
		}
		if got := regclient.IsLoopback(r.Context().RegistryStr()); got != insecure {
			t.Errorf("%s: loopback %v, want %v", ref, got, insecure)
		}
	}
	called := false
	tr := regclient.Transport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		called = true
		return nil, errors.New("reached the network")
	}))
	for _, u := range []string{"http://10.0.0.5:5000/v2/", "http://192.168.1.2/v2/", "http://registry.example/token"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		_, err := tr.RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), "refused plain HTTP") {
			t.Errorf("GET %s: %v, want a refusal", u, err)
		}
	}
	if called {
		t.Error("a plain-HTTP request to a non-loopback host reached the transport")
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/v2/", nil)
	tr.RoundTrip(req)
	if !called {
		t.Error("a loopback request did not reach the transport")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestPullDiskFull pulls into a store on a 1 MiB tmpfs (mounted in a user
// and mount namespace of its own, so no root is needed) and expects the
// full disk named, with nothing left there.
func TestPullDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare (util-linux) to mount a small tmpfs")
	}
	if out, err := exec.Command(unshare, "-rm", "true").CombinedOutput(); err != nil {
		t.Skipf("this machine does not let a user make a mount namespace (%v: %s), so no small disk to fill", err, out)
	}
	reg := startRegistry(t, "", "")
	dockerConfig(t, reg.Host, "", "")
	ref := reg.Push(t, "sandbar/fill:1", image(t, runtime.GOARCH, v1.Config{}, layer(t, entry{name: "noise", body: randomBody(t, 3<<20)})))
	dir := filepath.Join(t.TempDir(), "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "-rm", "sh", "-c", `mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" -test.run='^TestDiskFullChild$' -test.count=1 -test.v`, "sh", dir, os.Args[0])
	cmd.Env = append(os.Environ(), "OCIIMAGE_DISKFULL_REF="+ref, "OCIIMAGE_DISKFULL_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "disk-full-checked") {
		t.Fatalf("the pull on a full disk: %v\n%s", err, out)
	}
}

// TestDiskFullChild is TestPullDiskFull's half inside the namespace.
func TestDiskFullChild(t *testing.T) {
	ref, dir := os.Getenv("OCIIMAGE_DISKFULL_REF"), os.Getenv("OCIIMAGE_DISKFULL_DIR")
	if ref == "" {
		t.Skip("run by TestPullDiskFull")
	}
	s := &Store{Dir: dir}
	_, err := s.Pull(context.Background(), ref, registryOnly(PullOptions{}))
	wantErr(t, "full disk", err, ErrDiskFull, "the disk holding "+dir+" is full", "free some space")
	assertNothingLeft(t, s)
	if !t.Failed() {
		t.Log("disk-full-checked")
	}
}
