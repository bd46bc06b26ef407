package session

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/guest/image"
	"sandbar/vm/vmtest"
)

// mapSecrets is the thin keyring stand-in of these unit tests; the
// end-to-end tests in tests/ use the real keyring.
type mapSecrets map[string]string

func (m mapSecrets) Names(context.Context) ([]string, error) {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n, nil
}

func (m mapSecrets) Env(_ context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		out[n] = m[n]
	}
	return out, nil
}

const secretValue = "sk-ant-TEST-abcdef123456"

type fixture struct {
	m     *Manager
	st    *store.Store
	hv    *vmtest.Hypervisor
	repo  string
	paths config.Paths
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the Manager's Config changed by edit.
func newFixtureWith(t testing.TB, edit func(*Config)) *fixture {
	t.Helper()
	root := t.TempDir()
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(root, "gitconfig"))
	os.WriteFile(filepath.Join(root, "gitconfig"), []byte("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	repo := filepath.Join(root, "repos", "my répo with spaces")
	os.MkdirAll(repo, 0o755)
	git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "first")

	paths := config.Paths{Home: filepath.Join(root, "sandbar home"), Images: filepath.Join(root, "images"), Downloads: filepath.Join(root, "dl")}
	os.MkdirAll(paths.Home, 0o755)
	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	img := fakeImage(t)
	hv := &vmtest.Hypervisor{}
	cfg := Config{
		Paths: paths, Store: st, Hypervisor: hv,
		Secrets:    mapSecrets{"ANTHROPIC_API_KEY": secretValue, "OTHER": "other-value-42"},
		Image:      func(context.Context) (*image.Image, error) { return img, nil },
		HostMemory: 16 << 30, HostCPUs: 4,
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return &fixture{m: m, st: st, hv: hv, repo: repo, paths: paths}
}

func fakeImage(t testing.TB) *image.Image {
	d := t.TempDir()
	img := &image.Image{Dir: d, Kernel: filepath.Join(d, "kernel"), Initramfs: filepath.Join(d, "initramfs"),
		RootFS: filepath.Join(d, "rootfs.ext4"), AgentDisk: filepath.Join(d, "agent.ext4")}
	for _, f := range []string{img.Kernel, img.Initramfs, img.RootFS, img.AgentDisk} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	return img
}

func (f *fixture) wait(t *testing.T, id string) store.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := f.m.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return s
}

// treeHash hashes every file of a working tree (not .git) and HEAD.
func treeHash(t *testing.T, dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			fmt.Fprintf(h, "%s %x\n", p, sha256.Sum256(b))
		}
		return nil
	})
	fmt.Fprintf(h, "HEAD %s %s", git(t, dir, "rev-parse", "HEAD"), git(t, dir, "symbolic-ref", "HEAD"))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// waitFor waits until session id's log has a line holding text.
func waitFor(t *testing.T, f *fixture, id, text string) {
	t.Helper()
	f.until(t, id, 30*time.Second, fmt.Sprintf("a log line %q", text), func(store.Session) bool {
		lines, _ := f.m.Logs(context.Background(), id, 0, 10000)
		for _, l := range lines {
			if strings.Contains(l.Text, text) {
				return true
			}
		}
		return false
	})
}

// waitState waits until session id satisfies ok, failing t with what
// (what did not happen) and where the session is after d.
func (f *fixture) waitState(t *testing.T, id string, d time.Duration, what string, ok func(store.Session) bool) store.Session {
	t.Helper()
	return f.until(t, id, d, what, ok)
}

// until checks cond against session id (as the store has it) at each of
// the session's events, and, for what has no event of its own (log lines
// reach the store in batches, files appear on disk), every 50 ms; it
// fails t after d, saying what did not happen. id "" watches every
// session and hands cond the zero Session.
func (f *fixture) until(t *testing.T, id string, d time.Duration, what string, cond func(store.Session) bool) store.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	events := f.m.Subscribe(ctx, id) // before the first look, so nothing falls between
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var cur store.Session
		if id != "" {
			cur, _ = f.m.Get(context.Background(), id)
		}
		if cond(cur) {
			return cur
		}
		select {
		case <-events:
		case <-tick.C:
		case <-ctx.Done():
			if id == "" {
				t.Fatalf("%s did not happen within %s", what, d)
			}
			t.Fatalf("%s did not happen within %s: session %s is %s/%s (%q)", what, d, id, cur.State, cur.Activity, cur.Reason)
		}
	}
}

// repoWriter writes files (slash-separated paths) into the fixture's
// repository, with their folders.
func (f *fixture) repoWriter(t *testing.T) func(rel, content string) {
	return func(rel, content string) {
		t.Helper()
		p := filepath.Join(f.repo, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runToEnd starts a session whose agent ends at once on the fixture's
// repository, waits for its end, and returns its id and its log.
func (f *fixture) runToEnd(t *testing.T) (id, log string) {
	t.Helper()
	ctx := context.Background()
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "true"}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	lines, err := f.m.Logs(ctx, s.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text + "\n")
	}
	return s.ID, b.String()
}
