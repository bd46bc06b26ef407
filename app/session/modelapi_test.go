package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/store"
)

// TestStartRefusesClaudeWithoutItsAPI: before anything is created, a
// Claude Code session is refused when it has no key (as before), or when
// it could not reach its model API: the network off, the rules turning
// it off, a rule denying the API. The words say what to turn on, and
// turning it on starts it. A custom agent is not held to it.
func TestStartRefusesClaudeWithoutItsAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	claude := AgentSpec{Command: "sh", Args: []string{"-c", "sleep 60"}}
	refused := func(name string, o Options, words ...string) {
		t.Helper()
		o.Repo, o.MemoryMiB = f.repo, 512
		_, err := f.m.Start(ctx, o)
		if !errors.Is(err, ErrNoModelAPI) {
			t.Fatalf("%s: %v; want ErrNoModelAPI", name, err)
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
	}
	refused("network off", Options{Network: NetworkOff, NoNetwork: true},
		"Claude Code could not reach the Anthropic API: the session's network is off", "turn the network on")
	if err := f.st.SetProjectSetting(ctx, p.ID, store.ProjectNetwork, "mode off\n"); err != nil {
		t.Fatal(err)
	}
	refused("mode off in the project's rules", Options{}, "mode off", "choose Allowlist or Open for this session")
	if err := f.st.SetProjectSetting(ctx, p.ID, store.ProjectNetwork, "deny api.anthropic.com\n"); err != nil {
		t.Fatal(err)
	}
	refused("a deny rule", Options{Network: NetworkAllowlist}, `denied by "deny api.anthropic.com" in the project's settings`, "remove that rule")
	if ss, _ := f.m.List(ctx); len(ss) != 0 {
		t.Errorf("refused starts left sessions: %+v", ss)
	}
	entries, _ := os.ReadDir(filepath.Join(f.paths.Home, "sessions"))
	if len(entries) != 0 {
		t.Errorf("refused starts left session directories: %v", entries)
	}

	// Turned on: the project's mode off gives way to the session's
	// choice, and a custom agent never needed the API.
	if err := f.st.SetProjectSetting(ctx, p.ID, store.ProjectNetwork, "mode off\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, Network: NetworkAllowlist, Agent: AgentSpec{Command: "claude"}}); err != nil {
		t.Errorf("with the session's network on: %v", err)
	}
	if _, err := f.m.Start(ctx, Options{Repo: f.repo, MemoryMiB: 512, NoNetwork: true, Network: NetworkOff, Agent: claude}); err != nil {
		t.Errorf("a custom agent with the network off: %v", err)
	}

	// No key is refused first, with today's error.
	m2, err := New(ctx, Config{Paths: f.paths, Store: f.st, Hypervisor: f.hv, Secrets: mapSecrets{},
		Image: f.m.cfg.Image, HostMemory: 16 << 30, HostCPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Start(ctx, Options{Repo: f.repo, NoNetwork: true, Network: NetworkOff}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("claude without a key and without a network: %v; want ErrNoCredentials", err)
	}
}
