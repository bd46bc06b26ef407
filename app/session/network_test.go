package session

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/netstack"
	"sandbar/app/sandbox"
	"sandbar/app/store"
)

// runningNet starts a session whose agent sleeps and returns its run and
// network, once the agent runs.
func runningNet(t *testing.T, f *fixture) (*run, *sessionNet) {
	t.Helper()
	s, err := f.m.Start(context.Background(), Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	r := f.m.running(s.ID)
	if r == nil {
		t.Fatal("the session does not run here")
	}
	r.mu.Lock()
	sn := r.net
	r.mu.Unlock()
	if sn == nil {
		t.Fatal("the running session has no network")
	}
	t.Cleanup(func() { f.m.Stop(context.Background(), s.ID) })
	return r, sn
}

// TestAllowForSessionAndProject: a rule added for the session, or for its
// project, changes what the running session's network decides at once,
// and is kept where it belongs.
func TestAllowForSessionAndProject(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, sn := runningNet(t, f)
	d := netstack.Dest{Name: "registry.example", Port: 8443, Proto: netstack.TCP}
	if v := sn.decide(d); v.Allow || !strings.Contains(v.Reason, "allowlist") {
		t.Fatalf("before any rule: %+v, want denied as not in the allowlist", v)
	}
	rule, err := f.m.AddNetRule(ctx, r.id, ScopeSession, "allow", "registry.example:8443")
	if err != nil || rule.String() != "allow registry.example:8443" {
		t.Fatalf("AddNetRule: %v, %v", rule, err)
	}
	if v := sn.decide(d); !v.Allow || v.Rule != "allow registry.example:8443" {
		t.Errorf("after allow for this session: %+v", v)
	}
	if rules, _ := f.st.SessionNetRules(ctx, r.id); rules != "allow registry.example:8443\n" {
		t.Errorf("the session's own rules: %q", rules)
	}
	// Twice is once.
	f.m.AddNetRule(ctx, r.id, ScopeSession, "allow", "registry.example:8443")
	if rules, _ := f.st.SessionNetRules(ctx, r.id); strings.Count(rules, "registry.example") != 1 {
		t.Errorf("the rule was kept twice: %q", rules)
	}

	u := netstack.Dest{Name: "files.example", Port: 443, Proto: netstack.UDP}
	if v := sn.decide(u); v.Allow {
		t.Fatalf("udp before the project rule: %+v", v)
	}
	if _, err := f.m.AddNetRule(ctx, r.id, ScopeProject, "allow", "files.example/udp"); err != nil {
		t.Fatal(err)
	}
	if v := sn.decide(u); !v.Allow {
		t.Errorf("after allow for the project: %+v", v)
	}
	if text, _ := f.m.NetworkRules(ctx, ScopeProject, f.repo); !strings.Contains(text, "allow files.example/udp") {
		t.Errorf("the project's rules: %q", text)
	}
	// A deny for every session wins over both.
	if _, err := f.m.AddNetRule(ctx, r.id, ScopeSandbar, "deny", "*.example:*"); err != nil {
		t.Fatal(err)
	}
	if v := sn.decide(d); v.Allow || !strings.Contains(v.Reason, "deny") {
		t.Errorf("after deny for every session: %+v", v)
	}

	for _, bad := range []struct{ action, target string }{{"allow", "exa mple.com"}, {"permit", "example.com"}, {"allow", ""}} {
		if _, err := f.m.AddNetRule(ctx, r.id, ScopeSession, bad.action, bad.target); err == nil {
			t.Errorf("AddNetRule(%q, %q) took it", bad.action, bad.target)
		}
	}
	if err := f.m.SetNetworkRules(ctx, ScopeSandbar, "", "allow ok.example\nmode sideways\n", 0); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad rule text: %v, want an error naming line 2", err)
	}
	if text, _ := f.m.NetworkRules(ctx, ScopeSandbar, ""); text != "deny *.example:*\n" {
		t.Errorf("Sandbar's rules after a refused change: %q", text)
	}
}

// TestAttemptFloodIsBounded: a guest that tries endless destinations
// cannot flood the session's log or its subscribers; the store keeps at
// most MaxNetAttempts of them.
func TestAttemptFloodIsBounded(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	events := f.m.Subscribe(context.Background(), r.id)
	const tries = 3 * store.MaxNetAttempts
	now := time.Now()
	for i := range tries {
		d := netstack.Dest{Name: fmt.Sprintf("n%d.exfil.example", i), Port: 53, Proto: netstack.UDP}
		sn.attempt(netstack.Attempt{Time: now, Dest: d, Verdict: netstack.Verdict{Reason: "not in the session's allowlist"}})
		// The same destination again, a moment later: counted, not told.
		sn.attempt(netstack.Attempt{Time: now.Add(time.Millisecond), Dest: d, Verdict: netstack.Verdict{Reason: "not in the session's allowlist"}})
	}
	sn.flush()
	denials, overflow, nets := 0, 0, 0
	for drained := false; !drained; {
		select {
		case ev := <-events:
			switch {
			case ev.Kind == EventNet:
				nets++
			case ev.Kind == EventLog && strings.Contains(ev.Log.Text, "network: denied"):
				denials++
			case ev.Kind == EventLog && strings.Contains(ev.Log.Text, "further denials are counted"):
				overflow++
			}
		case <-time.After(300 * time.Millisecond):
			drained = true
		}
	}
	if denials != store.MaxNetAttempts || overflow != 1 || nets != store.MaxNetAttempts {
		t.Errorf("%d tries gave %d denial lines, %d overflow notes and %d network events; want %d, 1 and %d", 2*tries, denials, overflow, nets, store.MaxNetAttempts, store.MaxNetAttempts)
	}
	as, err := f.m.NetAttempts(context.Background(), r.id)
	if err != nil || len(as) != store.MaxNetAttempts {
		t.Fatalf("%d attempts kept (%v), want %d", len(as), err, store.MaxNetAttempts)
	}
	for _, a := range as {
		if a.Count != 2 {
			t.Fatalf("%s counted %d times, want 2", a.Host, a.Count)
		}
	}
}

// TestGuestPortsPublished: ports the guest reports listening are
// published on the host's loopback on ports of the kernel's choosing,
// and unpublished when they close; a port a person published stays.
func TestGuestPortsPublished(t *testing.T) {
	f := newFixture(t)
	r, sn := runningNet(t, f)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := uint16(ln.Addr().(*net.TCPAddr).Port)
	free := freePort(t)
	sn.guestPorts([]sandbox.Port{{Port: free}, {Port: 5432}, {Port: taken}, {Port: 80}})
	got := map[uint16]uint16{}
	for _, p := range sn.n.Published() {
		got[p.Guest] = p.Host
	}
	for _, g := range []uint16{free, 5432, taken, 80} {
		if got[g] == 0 || got[g] == g {
			t.Errorf("guest port %d: published on %d, want another number", g, got[g])
		}
	}
	manual, err := f.m.PublishPort(context.Background(), r.id, 9999, 0)
	if err != nil {
		t.Fatal(err)
	}
	sn.guestPorts([]sandbox.Port{{Port: free}})
	left := map[uint16]bool{}
	for _, p := range sn.n.Published() {
		left[p.Guest] = true
	}
	if !left[free] || !left[9999] || left[5432] || left[taken] || left[80] {
		t.Errorf("after the guest closed three ports: %v; want %d and the manual %v", sn.n.Published(), free, manual)
	}
	if ports, err := f.m.Ports(context.Background(), r.id); err != nil || len(ports) != 2 {
		t.Errorf("Ports: %v, %v", ports, err)
	}
}

func freePort(t *testing.T) uint16 {
	t.Helper()
	for {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := uint16(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		if p >= 1024 {
			return p
		}
	}
}

// TestGuestWithoutNetworkIsLogged: a guest that booted without the
// network it was given (system:ready's net_error) says so in the
// session's log, as one line, and the session goes on.
func TestGuestWithoutNetworkIsLogged(t *testing.T) {
	f := newFixture(t)
	f.hv.NetError = "DHCP on eth0: no server offered an address within 3s\n\x1b[2Jspoofed line"
	s, err := f.m.Start(context.Background(), Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo agent ran"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	if s = f.wait(t, s.ID); s.State != StateStopped {
		t.Fatalf("the session ended %s (%q), want stopped after its agent ran", s.State, s.Reason)
	}
	lines, err := f.m.Logs(context.Background(), s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range lines {
		if strings.HasPrefix(l.Text, "network: the VM has no network: ") {
			found = true
			if want := "network: the VM has no network: DHCP on eth0: no server offered an address within 3s spoofed line"; l.Stream != "system" || l.Text != want {
				t.Errorf("line %s %q, want system %q", l.Stream, l.Text, want)
			}
		}
	}
	if !found {
		t.Errorf("no line says the VM has no network")
	}
	waitFor(t, f, s.ID, "agent ran")
}
