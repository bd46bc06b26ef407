package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
	"sandbar/vm"
	"sandbar/vm/vmtest"
)

// hostsOf is a thin RemoteHosts: one backend per host name.
type hostsOf map[string]vm.Hypervisor

func (h hostsOf) Hypervisor(_ context.Context, name string) (vm.Hypervisor, error) {
	hv, ok := h[name]
	if !ok {
		return nil, errors.New("no such host")
	}
	return hv, nil
}

// TestStartOn: --on a recorded host boots the session's VM on that
// host's backend, never this machine's, and a restart goes there again;
// --on a host there is none of, or with no hosts wired in, is refused
// before anything is made.
func TestStartOn(t *testing.T) {
	ctx := context.Background()
	agent := AgentSpec{Command: "sh", Args: []string{"-c", "sleep 600"}}

	plain := newFixture(t)
	if _, err := plain.m.Start(ctx, Options{Repo: plain.repo, Agent: agent, MemoryMiB: 512, On: "far"}); !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "this machine only") {
		t.Errorf("--on without hosts wired in: %v", err)
	}

	far := &vmtest.Hypervisor{}
	f := newFixtureWith(t, func(c *Config) { c.Hosts = hostsOf{"far": far} })
	if err := f.st.AddHost(ctx, store.Host{Name: "far", URL: "ssh://me@far"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, On: "near"}); !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "hosts add near") {
		t.Errorf("--on a host there is none of: %v", err)
	}
	if ss, _ := f.st.Sessions(ctx, store.SessionFilter{}); len(ss) != 0 {
		t.Errorf("a refused start recorded %d sessions", len(ss))
	}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, On: "far"})
	if err != nil {
		t.Fatal(err)
	}
	f.until(t, s.ID, 30*time.Second, "a boot on far", func(store.Session) bool { return len(far.Booted()) == 1 })
	if n := len(f.hv.Booted()); n != 0 {
		t.Errorf("this machine's backend booted %d VMs for a session --on far", n)
	}
	if h, err := f.st.SessionHost(ctx, s.ID); err != nil || h != "far" {
		t.Errorf("SessionHost = %q, %v", h, err)
	}
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	if _, err := f.m.Restart(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	f.until(t, s.ID, 30*time.Second, "a second boot on far", func(store.Session) bool { return len(far.Booted()) == 2 })
	if n := len(f.hv.Booted()); n != 0 {
		t.Errorf("the restart booted on this machine (%d VMs)", n)
	}
}
