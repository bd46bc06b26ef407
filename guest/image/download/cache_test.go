package download

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sha256Digest(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest{Algo: "sha256", Sum: s[:]}
}

// files lists the regular files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

func newCache(t *testing.T) *Cache {
	t.Helper()
	return &Cache{Dir: t.TempDir(), retryDelay: time.Millisecond}
}

func TestFetchGood(t *testing.T) {
	body := []byte(strings.Repeat("sandbar ", 100000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	defer srv.Close()

	c := newCache(t)
	var mu sync.Mutex
	var last Progress
	calls := 0
	c.Progress = func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		last = p
		calls++
	}
	want := sha256Digest(body)
	path, err := c.Fetch(context.Background(), srv.URL+"/f", want)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(c.Dir, "sha256", want.Hex()) {
		t.Errorf("path = %s, want it under %s/sha256", path, c.Dir)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(body) {
		t.Fatalf("cached content differs (err %v)", err)
	}
	if calls == 0 || last.Done != int64(len(body)) || last.Total != last.Done || last.URL != srv.URL+"/f" {
		t.Errorf("last progress = %+v after %d calls, want Done == Total == %d", last, calls, len(body))
	}
	if fs := files(t, c.Dir); len(fs) != 1 {
		t.Errorf("cache holds %v, want only the file", fs)
	}
}

func TestFetchSHA512(t *testing.T) {
	body := []byte("npm tarball")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	sum := sha512.Sum512(body)
	d, err := ParseSRI("sha512-" + base64.StdEncoding.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	c := newCache(t)
	path, err := c.Fetch(context.Background(), srv.URL, d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(path, filepath.Join("sha512", d.Hex())) {
		t.Errorf("path %s not content-addressed by sha512", path)
	}
}

func TestFetchChecksumMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("tampered"))
	}))
	defer srv.Close()
	c := newCache(t)
	_, err := c.Fetch(context.Background(), srv.URL+"/x.deb", sha256Digest([]byte("original")))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	for _, s := range []string{"/x.deb", "checksum mismatch", "want sha256:", "got sha256:", "retry, or delete " + c.Dir} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if fs := files(t, c.Dir); len(fs) != 0 {
		t.Errorf("cache holds %v after a mismatch, want nothing", fs)
	}
}

func TestFetchCachedOffline(t *testing.T) {
	body := []byte("cached")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	c := newCache(t)
	ctx := context.Background()
	first, err := c.Fetch(ctx, srv.URL, sha256Digest(body))
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()

	second, err := c.Fetch(ctx, srv.URL, sha256Digest(body))
	if err != nil || second != first {
		t.Fatalf("offline Fetch of a cached file = %q, %v; want %q", second, err, first)
	}
	_, err = c.Fetch(ctx, srv.URL+"/other", sha256Digest([]byte("other")))
	if !errors.Is(err, ErrNoNetwork) {
		t.Fatalf("offline Fetch of a new file: err = %v, want ErrNoNetwork", err)
	}
	if !strings.Contains(err.Error(), "connect to the internet and retry; cached files are used when present") {
		t.Errorf("error %q does not say what to do", err)
	}
}

func TestFetchInterrupted(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Length", "100000")
		w.Write(make([]byte, 5000))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := newCache(t)
	_, err := c.Fetch(context.Background(), srv.URL+"/big", sha256Digest(make([]byte, 100000)))
	if err == nil {
		t.Fatal("Fetch of a truncated body succeeded")
	}
	if n := requests.Load(); n != 1+retries {
		t.Errorf("server saw %d requests, want %d (one and %d retries)", n, 1+retries, retries)
	}
	if fs := files(t, c.Dir); len(fs) != 0 {
		t.Errorf("cache holds %v after an interrupted download, want nothing", fs)
	}
}

func TestFetchRetrySucceeds(t *testing.T) {
	body := []byte("second time lucky")
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	c := newCache(t)
	if _, err := c.Fetch(context.Background(), srv.URL, sha256Digest(body)); err != nil {
		t.Fatalf("Fetch after one 503: %v", err)
	}
}

func TestFetchStalled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newCache(t)
	c.idleTimeout = 50 * time.Millisecond
	_, err := c.Fetch(context.Background(), srv.URL, sha256Digest(make([]byte, 100)))
	if !errors.Is(err, errIdle) {
		t.Fatalf("err = %v, want the idle timeout", err)
	}
	if fs := files(t, c.Dir); len(fs) != 0 {
		t.Errorf("cache holds %v after a stalled download, want nothing", fs)
	}
}

func TestFetchHTTPError(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	c := newCache(t)
	_, err := c.Fetch(context.Background(), srv.URL+"/gone.deb", sha256Digest(nil))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("err = %v, want a 404 StatusError", err)
	}
	if !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("error %q does not give the status", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("a 404 was requested %d times, want once", n)
	}
}

func TestFetchConcurrentSameDigest(t *testing.T) {
	body := []byte(strings.Repeat("x", 1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	c := newCache(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Fetch(context.Background(), fmt.Sprintf("%s/%d", srv.URL, i), sha256Digest(body))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("fetch %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(c.Path(sha256Digest(body)))
	if err != nil || string(got) != string(body) {
		t.Fatalf("cached file is wrong after concurrent fetches (err %v)", err)
	}
	if fs := files(t, c.Dir); len(fs) != 1 {
		t.Errorf("cache holds %v, want one file", fs)
	}
}

func TestFetchMutable(t *testing.T) {
	var mu sync.Mutex
	content, status := "v1", http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		w.Write([]byte(content))
	}))
	c := newCache(t)
	ctx := context.Background()
	url := srv.URL + "/dists/bookworm/Release"

	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	path, fromCache, err := c.FetchMutable(ctx, url)
	if err != nil || fromCache || read(path) != "v1" {
		t.Fatalf("first FetchMutable = %q, %v, %v", path, fromCache, err)
	}
	mu.Lock()
	content = "v2"
	mu.Unlock()
	path, fromCache, err = c.FetchMutable(ctx, url)
	if err != nil || fromCache || read(path) != "v2" {
		t.Fatalf("FetchMutable after a change = %q, %v, %v; want the new content", path, fromCache, err)
	}

	mu.Lock()
	status = http.StatusNotFound
	mu.Unlock()
	if _, _, err = c.FetchMutable(ctx, url); err == nil {
		t.Error("FetchMutable hid a 404 behind the cached copy")
	}

	srv.Close()
	path, fromCache, err = c.FetchMutable(ctx, url)
	if err != nil || !fromCache || read(path) != "v2" {
		t.Fatalf("offline FetchMutable = %q, %v, %v; want the cached v2", path, fromCache, err)
	}
	if _, _, err = c.FetchMutable(ctx, srv.URL+"/never-fetched"); !errors.Is(err, ErrNoNetwork) {
		t.Errorf("offline FetchMutable with no copy: err = %v, want ErrNoNetwork", err)
	}
	if fs := files(t, c.Dir); len(fs) != 1 {
		t.Errorf("cache holds %v, want the one index", fs)
	}
}

func TestFetchCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newCache(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Fetch(ctx, srv.URL, sha256Digest(nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
