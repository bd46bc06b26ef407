package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandbar/app/net/broker"
	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/vm"
)

// A session's network (see app/net/netstack): its own userspace stack in
// this process, deny-by-default egress decided by a policy composed of
// Sandbar's settings, the project's, the repository's .sandbar/network
// as the session started with it, and what the person allowed for the
// session; a broker that holds the model API's key so the VM never does;
// and the guest's listening ports published on the host's loopback.

// DefaultAnthropicUpstream is the model API.
const DefaultAnthropicUpstream = "https://api.anthropic.com"

// EnvAnthropicUpstream overrides store.SettingAnthropicUpstream for the engine.
const EnvAnthropicUpstream = "SANDBAR_ANTHROPIC_UPSTREAM"

// ErrNetworkRules says a network rule text could not be read.
var ErrNetworkRules = errors.New("network rules are not valid")

// Network modes a session may ask for (Options.Network).
const (
	NetworkOff       = string(policy.ModeOff)
	NetworkAllowlist = string(policy.ModeAllowlist)
	NetworkOpen      = string(policy.ModeOpen)
)

// parseRules reads a rule text from where, naming it in errors.
func parseRules(text string, src policy.Source, where string) (policy.File, error) {
	f, err := policy.Parse([]byte(text), src)
	if err != nil {
		return policy.File{}, fmt.Errorf("%s: %w: %w", where, err, ErrNetworkRules)
	}
	return f, nil
}

// sessionMode is the mode a session asked for: off without a network,
// else its explicit choice ("" follows the settings).
func sessionMode(l store.Limits) policy.Mode {
	if !l.Network {
		return policy.ModeOff
	}
	return policy.Mode(l.NetMode)
}

// composePolicy builds a session's policy from its layers, as they are
// now; notes are what the log should say about it (a repository asking
// for more than it may).
func (m *Manager) composePolicy(ctx context.Context, s store.Session) (*policy.Policy, []string, error) {
	return m.composeWith(ctx, s, true)
}

// composeWith is composePolicy; without recorded, the session is not in
// the store yet and has no rules of its own.
func (m *Manager) composeWith(ctx context.Context, s store.Session, recorded bool) (*policy.Policy, []string, error) {
	repo, err := os.ReadFile(m.cfg.Paths.SessionDir(s.ID).NetworkRepo())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("the session's copy of %s: %w", workspace.NetworkFile, err)
	}
	var own string
	if recorded {
		if own, err = m.cfg.Store.SessionNetRules(ctx, s.ID); err != nil {
			return nil, nil, err
		}
	}
	return m.composeLayers(ctx, s.Limits, s.ProjectID, repo, own)
}

// composeLayers builds a policy from Sandbar's network settings, the
// project's, the repository's trusted file (repo) and a session's own
// rules (own), in that order, in the mode limits give.
func (m *Manager) composeLayers(ctx context.Context, limits store.Limits, projectID int64, repo []byte, own string) (*policy.Policy, []string, error) {
	var layers []policy.Layer
	add := func(text string, src policy.Source, where string) error {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		f, err := parseRules(text, src, where)
		if err != nil {
			return err
		}
		layers = append(layers, policy.Layer{Source: src, File: f})
		return nil
	}
	if v, _, err := m.cfg.Store.Setting(ctx, store.SettingNetwork); err != nil {
		return nil, nil, err
	} else if err := add(v, policy.SourceSandbar, "Sandbar's network settings"); err != nil {
		return nil, nil, err
	}
	if v, _, err := m.cfg.Store.ProjectSetting(ctx, projectID, store.ProjectNetwork); err != nil {
		return nil, nil, err
	} else if err := add(v, policy.SourceProject, "the project's network settings"); err != nil {
		return nil, nil, err
	}
	if err := add(string(repo), policy.SourceRepository, workspace.NetworkFile); err != nil {
		return nil, nil, err
	}
	if err := add(own, policy.SourceSession, "the session's own network rules"); err != nil {
		return nil, nil, err
	}
	p, notes := policy.Compose(sessionMode(limits), layers...)
	return p, notes, nil
}

// sessionNet is a running VM's network.
type sessionNet struct {
	r     *run
	n     *netstack.Network
	pol   atomic.Pointer[policy.Policy]
	api   *http.Server
	guest *os.File // the hypervisor's end of the NIC's socket pair
	log   *slog.Logger

	mu       sync.Mutex
	attempts map[attemptKey]*store.NetAttempt // not yet in the store
	logged   map[attemptKey]time.Time         // when a denial was last logged
	overflow bool                             // logged was full, and the log said so
	pruned   time.Time                        // when logged was last rid of old ones
	ports    map[uint16]netstack.Port         // published because the guest listens
	manual   map[uint16]netstack.Port         // published because a person asked
	wake     chan struct{}
	stop     chan struct{}
	done     sync.WaitGroup
}

// startNet builds the session's network for one boot and returns the NIC
// to boot with; sn.close ends it.
func (r *run) startNet(ctx context.Context) (*sessionNet, *vm.NIC, string, error) {
	p, notes, err := r.m.composePolicy(ctx, r.s)
	if err != nil {
		return nil, nil, "", err
	}
	for _, n := range notes {
		r.systemLine("network: " + n)
	}
	sn := &sessionNet{
		r: r, log: r.log.With("part", "network"),
		attempts: map[attemptKey]*store.NetAttempt{}, logged: map[attemptKey]time.Time{},
		ports: map[uint16]netstack.Port{}, manual: map[uint16]netstack.Port{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	sn.pol.Store(p)
	mac := sessionMAC(r.id)
	n, err := netstack.New(netstack.Config{
		Decide:    sn.decide,
		OnAttempt: sn.attempt,
		Resolve:   sn.resolve,
		Dial:      r.m.cfg.NetDial,
		Proxy:     r.m.cfg.Proxy,
		Intercept: sn.intercept,
		GuestMAC:  mac,
		Origin:    netstack.OriginLabel(r.id),
		Logger:    sn.log,
	})
	if err != nil {
		return nil, nil, "", err
	}
	sn.n = n
	host, guest, framing, err := sandbox.NICPair(r.m.cfg.Hypervisor)
	if err != nil {
		n.Close()
		return nil, nil, "", err
	}
	sn.guest = guest
	sn.done.Go(func() {
		if err := n.Serve(context.Background(), host, netstack.Framing(framing)); err != nil {
			sn.log.Warn("the VM's network link ended", "err", err)
		}
	})
	if len(r.setup.creds.api) > 0 {
		if err := sn.serveBroker(); err != nil {
			sn.close()
			return nil, nil, "", err
		}
	}
	sn.done.Go(sn.flusher)
	g := n.Guest()
	r.systemLine(fmt.Sprintf("network: %s; %s", describeMode(p.Mode()), sn.summary(p)))
	if r.m.cfg.Proxy.Set() {
		r.systemLine("network: allowed TCP connections go through this machine's " + r.m.cfg.Proxy.Describe() + "; UDP goes directly")
	}
	return sn, &vm.NIC{File: guest, MAC: mac, MTU: g.MTU}, g.KernelArg(), nil
}

func describeMode(m policy.Mode) string {
	switch m {
	case policy.ModeOpen:
		return "open (anything public; host loopback and private networks stay closed)"
	case policy.ModeOff:
		return "off"
	}
	return "allowlist (only what the rules allow)"
}

func (sn *sessionNet) summary(p *policy.Policy) string {
	allow, deny := 0, 0
	for _, r := range p.Rules() {
		if r.Action == policy.Deny {
			deny++
		} else {
			allow++
		}
	}
	return fmt.Sprintf("%d allow rules, %d deny rules; the model API through Sandbar's broker (the key stays on this machine)", allow, deny)
}

// decide is the policy's word, as the network asks for it.
func (sn *sessionNet) decide(d netstack.Dest) netstack.Verdict {
	dec := sn.pol.Load().Decide(policy.Dest{Name: d.Name, Addr: d.Addr, Port: d.Port, Proto: policy.Proto(d.Proto)})
	v := netstack.Verdict{Allow: dec.Allow, Reason: dec.Reason, ReadOnly: dec.ReadOnly}
	if dec.Rule != nil {
		v.Rule = dec.Rule.String()
	}
	return v
}

// resolve looks a name up: the policy's host mappings first, then the
// host's resolver (IPv4).
func (sn *sessionNet) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	if a, ok := sn.pol.Load().Hosts()[name]; ok {
		return []netip.Addr{a}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
}

// intercept hands the broker the HTTPS connections to a host a brokered
// secret is bound to (which get writes: the person gave the token for
// that), and the connections the policy allows for reads only (the
// default allowlist's registries and code hosts), whose writes it refuses.
func (sn *sessionNet) intercept(d netstack.Dest, v netstack.Verdict) netstack.Interceptor {
	r := sn.r
	if r.setup.interceptor == nil || d.Proto != netstack.TCP {
		return nil
	}
	host := d.Name
	bound := false
	for i, c := range r.setup.creds.intercept {
		if host != "" && strings.EqualFold(c.Host, host) && r.setup.creds.ports[i] == d.Port {
			bound = true
		}
	}
	switch {
	case bound:
	case !v.ReadOnly:
		return nil
	case host == "":
		host = d.Addr.String()
	}
	t := broker.Target{Host: host, Port: d.Port, ReadOnly: !bound}
	if t.ReadOnly {
		target := writeTarget(host, d.Port)
		t.HowToAllow = fmt.Sprintf("run `sandbar net %s allow %s write` on your machine, or press Allow writes for this session in the session's Network tab.", short(r.id), target)
		t.OnRefused = func(info broker.RequestInfo) { sn.refusedWrite(d, v, info) }
	}
	return func(ctx context.Context, guest net.Conn, dial func(context.Context) (net.Conn, error)) {
		t.Dial = dial
		if err := r.setup.interceptor.Serve(ctx, guest, t); err != nil {
			sn.log.Debug("intercepted connection", "host", host, "read_only", t.ReadOnly, "err", err)
		}
	}
}

// writeTarget is what follows allow for the rule that lets writes reach
// host:port: the port is left out when it is 443.
func writeTarget(host string, port uint16) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == 443 {
		return host
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// reload composes the policy again (rules changed); it takes effect with
// the next connection.
func (sn *sessionNet) reload(ctx context.Context) error {
	p, notes, err := sn.r.m.composePolicy(ctx, sn.r.s)
	if err != nil {
		return err
	}
	sn.pol.Store(p)
	for _, n := range notes {
		sn.r.systemLine("network: " + n)
	}
	return nil
}

// close ends the network: ports, broker, stack, the NIC's socket.
func (sn *sessionNet) close() {
	if sn == nil {
		return
	}
	close(sn.stop)
	if sn.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sn.api.Shutdown(ctx)
		cancel()
	}
	sn.n.Close()
	sn.done.Wait()
	if sn.guest != nil {
		sn.guest.Close()
	}
}
