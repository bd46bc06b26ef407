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

// sizedHost is a host's backend that says what the host has
// (vm.HostReporter), as vm/libvirt does from libvirt's node info.
type sizedHost struct {
	*vmtest.Hypervisor
	res vm.Resources
}

func (h sizedHost) HostResources(context.Context) (vm.Resources, error) { return h.res, nil }

// TestStartOnChecksTheHost: a session --on a host has its vCPUs and
// memory checked against that host's (as it reports them), never this
// machine's: too much for the host is refused naming it, and what this
// machine could not hold starts there. Sessions on a host do not count
// against this machine's budget. --on auto places a session where the
// most memory is free for it, says so in its log, and refuses, naming
// each machine, where none fits.
func TestStartOnChecksTheHost(t *testing.T) {
	ctx := context.Background()
	agent := AgentSpec{Command: "sh", Args: []string{"-c", "sleep 600"}}
	small := sizedHost{&vmtest.Hypervisor{}, vm.Resources{CPUs: 1, Memory: 4 << 30, FreeMemory: 900 * vm.MiB}}
	big := sizedHost{&vmtest.Hypervisor{}, vm.Resources{CPUs: 64, Memory: 256 << 30, FreeMemory: 200 << 30}}
	f := newFixtureWith(t, func(c *Config) { c.Hosts = hostsOf{"small": small, "big": big} })
	for _, n := range []string{"small", "big"} {
		if err := f.st.AddHost(ctx, store.Host{Name: n, URL: "ssh://me@" + n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		o    Options
		want error
		says string
	}{
		{"memory over the host's free", Options{MemoryMiB: 1024, On: "small"}, ErrBudget, "host small: it has 900 MiB free"},
		{"memory over the host's budget", Options{MemoryMiB: 3000, On: "small"}, ErrBudget, "does not fit on host small"},
		{"vCPUs over the host's", Options{MemoryMiB: 512, CPUs: 2, On: "small"}, ErrBadOptions, "host small's cores"},
		{"fits nowhere", Options{MemoryMiB: 300 << 10, On: OnAuto}, ErrBudget, "this machine: "},
	} {
		tc.o.Repo, tc.o.Agent = f.repo, agent
		_, err := f.m.Start(ctx, tc.o)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		if tc.o.On == OnAuto && err != nil && !(strings.Contains(err.Error(), "host small") && strings.Contains(err.Error(), "host big")) {
			t.Errorf("%s: the refusal does not name each host: %v", tc.name, err)
		}
	}
	if ss, _ := f.st.Sessions(ctx, store.SessionFilter{}); len(ss) != 0 {
		t.Fatalf("refused starts recorded %d sessions", len(ss))
	}

	// 24 vCPUs and 32 GiB: more than this machine has (4 cores, 16 GiB).
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 32 << 10, CPUs: 24, On: "big"})
	if err != nil {
		t.Fatalf("a session that fits the host but not this machine: %v", err)
	}
	f.until(t, s.ID, 30*time.Second, "a boot on big", func(store.Session) bool { return len(big.Booted()) == 1 })
	if b, err := f.m.Budget(ctx); err != nil || b.Used != 0 {
		t.Errorf("this machine's budget counts the session on big: %+v, %v", b, err)
	}

	a, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, On: OnAuto})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := f.st.SessionHost(ctx, a.ID); err != nil || h != "big" {
		t.Errorf("--on auto placed the session on %q (%v), want big: the most free memory", h, err)
	}
	f.until(t, a.ID, 30*time.Second, "a boot on big", func(store.Session) bool { return len(big.Booted()) == 2 })
	f.until(t, a.ID, 30*time.Second, "the log to say where --on auto placed the session and why", func(store.Session) bool {
		lines, _ := f.m.Logs(ctx, a.ID, 0, 0)
		return hasLogLine(lines, "--on auto: running on host big, which has the most free memory")
	})
}
