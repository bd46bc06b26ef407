// Package sessiontest builds a real session.Manager for tests of the parts
// above it (the UI, the CLI): a real SQLite store and real git
// repositories in temp directories, and at the VM edge the in-process
// machines of vm/vmtest (the real guest supervisor over net.Pipe). Agents
// are shell commands run on the host by that supervisor.
//
// It is not a sandbox: those agents run as this user on this machine, so
// it is for tests only, and it proves nothing about isolation (the
// real-VM tests in tests/ do).
package sessiontest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/guest/image"
	"sandbar/vm/vmtest"
)

// Env is one test's Sandbar.
type Env struct {
	Manager    *session.Manager
	Store      *store.Store
	Hypervisor *vmtest.Hypervisor
	Paths      config.Paths
	// Secrets are the agent's environment (a map stands in for the
	// keyring here).
	Secrets Secrets
	root    string
}

// Secrets is a map SecretSource.
type Secrets map[string]string

// Names implements session.SecretSource.
func (s Secrets) Names(context.Context) ([]string, error) {
	var n []string
	for k := range s {
		n = append(n, k)
	}
	sort.Strings(n)
	return n, nil
}

// Env implements session.SecretSource.
func (s Secrets) Env(_ context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		out[n] = s[n]
	}
	return out, nil
}

// New returns a Manager with an ANTHROPIC_API_KEY secret, 16 GiB and 4
// CPUs of pretend host, closed when t ends. HOME and the git config are
// pointed into a temp dir.
func New(t testing.TB) *Env {
	t.Helper()
	root := t.TempDir()
	t.Setenv("HOME", filepath.Join(root, "home"))
	gc := filepath.Join(root, "gitconfig")
	os.WriteFile(gc, []byte("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n"), 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", gc)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	paths := config.Paths{Home: filepath.Join(root, "sandbar"), Images: filepath.Join(root, "images"), Downloads: filepath.Join(root, "downloads")}
	os.MkdirAll(paths.Home, 0o755)
	st, err := store.Open(paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	img := fakeImage(t)
	hv := &vmtest.Hypervisor{}
	secrets := Secrets{"ANTHROPIC_API_KEY": "sk-ant-sessiontest-0123456789"}
	m, err := session.New(context.Background(), session.Config{
		Paths: paths, Store: st, Hypervisor: hv, Secrets: secrets,
		Image:      func(context.Context) (*image.Image, error) { return img, nil },
		HostMemory: 16 << 30, HostCPUs: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return &Env{Manager: m, Store: st, Hypervisor: hv, Paths: paths, Secrets: secrets, root: root}
}

// Repo makes a git repository named name (spaces and non-ASCII welcome)
// with one commit, and returns its path.
func (e *Env) Repo(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(e.root, "repos", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# "+name+"\n"), 0o644)
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-qm", "first")
	return dir
}

// Give adds repo as a project whose sessions get the secrets named (see
// session.Manager.SetProjectSecrets).
func (e *Env) Give(t testing.TB, repo string, names ...string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := e.Manager.AddProject(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if err := e.Manager.SetProjectSecrets(ctx, repo, names); err != nil {
		t.Fatal(err)
	}
}

// Git runs git in dir and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Shell is a custom agent running script with sh -c.
func Shell(script string) session.AgentSpec {
	return session.AgentSpec{Command: "sh", Args: []string{"-c", script}}
}

// WaitState waits until the session (id, or a prefix of it) is in state,
// as the Manager's events tell it, and returns the session as the store
// has it then (it may have moved on since). The store is read once after
// subscribing, so a state reached before is not missed. After d it fails
// t, saying which state was expected and which was last seen.
func (e *Env) WaitState(t testing.TB, id string, state store.State, d time.Duration) store.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	full := id
	if s, err := e.Manager.Get(ctx, id); err == nil {
		full = s.ID
	}
	events := e.Manager.Subscribe(ctx, "")
	last, err := e.Manager.Get(ctx, full)
	if err == nil && last.State == state {
		return last
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				e.failState(t, id, full, state, last, d)
			}
			if !strings.HasPrefix(ev.Session, full) && ev.Kind != session.EventDropped {
				continue
			}
			switch ev.Kind {
			case session.EventState:
				full = ev.Session
				last.ID, last.State, last.Reason = ev.Session, ev.State, ev.Reason
				if ev.State != state {
					continue
				}
			case session.EventDropped: // state events are never dropped, but say so anyway
				if s, err := e.Manager.Get(ctx, full); err == nil {
					last = s
				}
				if last.State != state {
					continue
				}
			default:
				continue
			}
			s, err := e.Manager.Get(context.Background(), full)
			if err != nil {
				t.Fatalf("session %s reached %s, then could not be read: %v", full, state, err)
			}
			return s
		case <-ctx.Done():
			e.failState(t, id, full, state, last, d)
		}
	}
}

// failState fails t: session id did not reach state within d; last is
// the state it was last seen in.
func (e *Env) failState(t testing.TB, id, full string, state store.State, last store.Session, d time.Duration) {
	t.Helper()
	seen := "no state (it was never found)"
	if last.State != "" {
		seen = string(last.State)
		if last.Reason != "" {
			seen += " (" + last.Reason + ")"
		}
	}
	t.Fatalf("session %s did not become %s within %s: it was last seen %s; its log ends:\n%s", id, state, d, seen, e.logTail(full, 20))
}

// logTail returns the last n lines of session id's log (its full id),
// one a line with its stream, for a failing test to show.
func (e *Env) logTail(id string, n int) string {
	lines, err := e.Store.LastLogs(context.Background(), id, n)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s: %s\n", l.Stream, l.Text)
	}
	return b.String()
}

func fakeImage(t testing.TB) *image.Image {
	d := t.TempDir()
	img := &image.Image{Dir: d, Kernel: filepath.Join(d, "kernel"), Initramfs: filepath.Join(d, "initramfs"),
		RootFS: filepath.Join(d, "rootfs.ext4"), AgentDisk: filepath.Join(d, "agent.ext4")}
	for _, f := range []string{img.Kernel, img.Initramfs, img.RootFS, img.AgentDisk} {
		os.WriteFile(f, []byte("vmtest"), 0o644)
	}
	return img
}
