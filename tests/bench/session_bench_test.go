//go:build linux

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/guest/image"
)

// noSecrets: the benchmark's agent is a plain command that needs none.
type noSecrets struct{}

func (noSecrets) Names(context.Context) ([]string, error) { return nil, nil }
func (noSecrets) Env(context.Context, []string) (map[string]string, error) {
	return map[string]string{}, nil
}

// manager is a real session manager over a store in root, booting this
// benchmark's image; it is closed when the benchmark ends.
func (e *benchEnv) manager(b *testing.B, root string, opts ...func(*session.Config)) (*session.Manager, config.Paths) {
	b.Helper()
	paths := config.Paths{Home: filepath.Join(root, "home"), Images: filepath.Dir(e.img.Dir), Downloads: filepath.Join(root, "dl")}
	st, err := store.Open(filepath.Join(paths.Home, "sandbar.db"))
	if err != nil {
		b.Fatal(err)
	}
	cfg := session.Config{
		Paths: paths, Store: st, Secrets: noSecrets{}, Hypervisor: e.hv,
		Image: func(context.Context) (*image.Image, error) { return e.img, nil },
	}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := session.New(context.Background(), cfg)
	if err != nil {
		st.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		m.Close(context.Background())
		st.Close()
	})
	return m, paths
}

// emptyRepo makes root/repo, a repository with one empty commit.
func emptyRepo(b *testing.B, root string) string {
	b.Helper()
	repo := filepath.Join(root, "repo")
	os.MkdirAll(repo, 0o755)
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// waitEvent returns when the first event ok takes arrives, failing b
// (naming what) if ctx ends first.
func waitEvent(b *testing.B, ctx context.Context, events <-chan session.Event, what string, ok func(session.Event) bool) time.Time {
	b.Helper()
	for {
		select {
		case ev := <-events:
			if ok(ev) {
				return time.Now()
			}
		case <-ctx.Done():
			b.Fatalf("no %s", what)
		}
	}
}

// BenchmarkSessionStart: Start → agent started through the real manager,
// store, git clone and VM, and where the time goes (clone, boot, ready,
// agent spawn).
func BenchmarkSessionStart(b *testing.B) {
	e := setup(b)
	root := b.TempDir()
	repo := emptyRepo(b, root)
	m, _ := e.manager(b, root)
	total := &series{Metric: "session Start → agent started (2 vCPU, 2 GiB)", Key: "start", Unit: "ms"}
	parts := map[string]*series{}
	order := []string{"clone", "boot", "ready", "agent"}
	for _, k := range order {
		parts[k] = &series{Metric: "  of which " + k, Key: "start-" + k, Unit: "ms"}
	}
	for i := 0; i < e.runs; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		s, err := m.Start(ctx, session.Options{Repo: repo, CPUs: 2, MemoryMiB: 2048, DiskGiB: 1, NoNetwork: true,
			Agent: session.AgentSpec{Command: "true"}})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		s, err = m.Wait(ctx, s.ID)
		cancel()
		if err != nil || s.State != session.StateStopped {
			b.Fatalf("session %s: %v %s %q", s.ID, err, s.State, s.Reason)
		}
		var sum time.Duration
		for _, k := range order {
			d, ok := s.Timings[k]
			if !ok {
				b.Fatalf("no %s timing: %v", k, s.Timings)
			}
			parts[k].add(ms(d))
			sum += d
		}
		total.add(ms(sum))
		m.Remove(context.Background(), s.ID, true)
	}
	ss := []*series{total}
	for _, k := range order {
		ss = append(ss, parts[k])
	}
	e.report(b, ss...)
}
