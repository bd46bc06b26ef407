package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sandbar/app/secrets"
)

// goneSecrets is a keyring from which some recorded secrets were deleted
// behind Sandbar's back (in Seahorse, say): their names are recorded,
// reading them fails with the keyring's ErrNotFound.
type goneSecrets struct {
	mapSecrets
	gone []string
}

func (g goneSecrets) Names(ctx context.Context) ([]string, error) {
	n, _ := g.mapSecrets.Names(ctx)
	return append(n, g.gone...), nil
}

func (g goneSecrets) Env(ctx context.Context, names []string) (map[string]string, error) {
	for _, n := range names {
		for _, x := range g.gone {
			if n == x {
				return nil, fmt.Errorf("no secret %s: set it with `sandbar secrets set %s`: %w", n, n, secrets.ErrNotFound)
			}
		}
	}
	return g.mapSecrets.Env(ctx, names)
}

// TestSecretGoneFromTheKeyring: a secret the project lists that is gone
// from the keyring is a warning in the session's log, not a refusal; the
// model API's key gone refuses a Claude session only.
func TestSecretGoneFromTheKeyring(t *testing.T) {
	gone := goneSecrets{mapSecrets: mapSecrets{"ANTHROPIC_API_KEY": secretValue}, gone: []string{"BARS_TOKEN"}}
	src := &gone
	f := newFixtureWith(t, func(c *Config) { c.Secrets = wrapped{src} })
	ctx := context.Background()
	p, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.m.SetProjectSecrets(ctx, p.Name, []string{"BARS_TOKEN"}); err != nil {
		t.Fatal(err)
	}
	s, err := f.m.Start(ctx, Options{Project: p.Name, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo started"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatalf("a session whose project lists a secret gone from the keyring: %v", err)
	}
	if got := f.wait(t, s.ID); got.State != StateStopped {
		t.Fatalf("ended %s: %s", got.State, got.Reason)
	}
	lines, _ := f.m.Logs(ctx, s.ID, 0, 0)
	var log strings.Builder
	for _, l := range lines {
		log.WriteString(l.Text + "\n")
	}
	if !strings.Contains(log.String(), "BARS_TOKEN") || !strings.Contains(log.String(), "sandbar secrets set BARS_TOKEN") {
		t.Errorf("the log does not name the missing secret and how to set it:\n%s", log.String())
	}

	// The key Claude Code needs, gone too: a Claude session is refused,
	// saying what to set; a custom agent still starts.
	src.gone = append(src.gone, "ANTHROPIC_API_KEY")
	delete(src.mapSecrets, "ANTHROPIC_API_KEY")
	if _, err := f.m.Start(ctx, Options{Project: p.Name, MemoryMiB: 512}); !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "sandbar secrets set ANTHROPIC_API_KEY") {
		t.Errorf("a Claude session without its key: %v, want ErrNoCredentials saying what to set", err)
	}
	s2, err := f.m.Start(ctx, Options{Project: p.Name, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "true"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatalf("a custom agent without the model API's key: %v", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	f.m.Wait(ctx2, s2.ID)
}

// wrapped lets a test change the keyring under a running Manager.
type wrapped struct{ g *goneSecrets }

func (w wrapped) Names(ctx context.Context) ([]string, error) { return w.g.Names(ctx) }
func (w wrapped) Env(ctx context.Context, n []string) (map[string]string, error) {
	return w.g.Env(ctx, n)
}
