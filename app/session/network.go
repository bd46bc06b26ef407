package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
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
	"sandbar/guest/protocol"
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

// The model API's credentials: always brokered, never in the VM.
var modelCredentials = map[string]string{
	"ANTHROPIC_API_KEY":       "x-api-key",
	"CLAUDE_CODE_OAUTH_TOKEN": "Authorization",
}

// brokerPort is the gateway's port the model-API broker serves.
const brokerPort = 80

// BrokerURL is ANTHROPIC_BASE_URL inside a session.
var BrokerURL = "http://" + netstack.GatewayIP.String()

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
	if v, _, err := m.cfg.Store.ProjectSetting(ctx, s.ProjectID, store.ProjectNetwork); err != nil {
		return nil, nil, err
	} else if err := add(v, policy.SourceProject, "the project's network settings"); err != nil {
		return nil, nil, err
	}
	if b, err := os.ReadFile(m.cfg.Paths.SessionDir(s.ID).NetworkRepo()); err == nil {
		if err := add(string(b), policy.SourceRepository, workspace.NetworkFile); err != nil {
			return nil, nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("the session's copy of %s: %w", workspace.NetworkFile, err)
	}
	if recorded {
		rules, err := m.cfg.Store.SessionNetRules(ctx, s.ID)
		if err != nil {
			return nil, nil, err
		}
		if err := add(rules, policy.SourceSession, "the session's own network rules"); err != nil {
			return nil, nil, err
		}
	}
	p, notes := policy.Compose(sessionMode(s.Limits), layers...)
	return p, notes, nil
}

// netCredentials are the secrets of a session's environment the broker
// keeps on the host: the model API's, and every secret bound to a host.
// The environment gets a sentinel for each instead of its value.
type netCredentials struct {
	api       []broker.Credential // bound to the model API
	intercept []broker.Credential // bound to another host (HTTPS interception)
	ports     []uint16            // the HTTPS port of each of intercept's hosts
}

// brokered splits env: brokered secrets leave it (their sentinel takes
// their place) and come back as credentials.
func (m *Manager) brokered(ctx context.Context, env map[string]string, upstream *url.URL) (netCredentials, error) {
	var c netCredentials
	bindings, err := m.cfg.Store.SecretBrokers(ctx)
	if err != nil {
		return c, err
	}
	for name, value := range env {
		header, api := modelCredentials[name]
		b, bound := bindings[name]
		if !api && !bound {
			continue
		}
		sentinel, err := broker.NewSentinel(name)
		if err != nil {
			return c, err
		}
		env[name] = sentinel
		if api {
			c.api = append(c.api, broker.Credential{Name: name, Sentinel: sentinel, Value: value, Host: upstream.Hostname(), Header: header})
			continue
		}
		host, port := brokerTarget(b.Host)
		c.intercept = append(c.intercept, broker.Credential{Name: name, Sentinel: sentinel, Value: value, Host: host, Header: b.Header})
		c.ports = append(c.ports, port)
	}
	if len(c.api) > 0 {
		env["ANTHROPIC_BASE_URL"] = BrokerURL
	}
	return c, nil
}

// anthropicUpstream is where the broker sends model-API requests.
func (m *Manager) anthropicUpstream(ctx context.Context) (*url.URL, error) {
	raw := DefaultAnthropicUpstream
	if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingAnthropicUpstream); ok && strings.TrimSpace(v) != "" {
		raw = strings.TrimSpace(v)
	}
	if v := m.cfg.AnthropicUpstream; v != "" {
		raw = v
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the model API's address %q is not an http(s) URL: fix the %s setting", raw, store.SettingAnthropicUpstream)
	}
	return u, nil
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

type attemptKey struct {
	proto, host string
	port        uint16
	allowed     bool
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
		Intercept: sn.intercept,
		GuestMAC:  mac,
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

// serveBroker serves the model-API broker on the gateway.
func (sn *sessionNet) serveBroker() error {
	r := sn.r
	h, err := broker.NewAPI(broker.APIConfig{
		Upstream:    r.setup.upstream,
		Credentials: r.setup.creds.api,
		OnRequest:   sn.brokerRequest,
		Logger:      sn.log,
	})
	if err != nil {
		return err
	}
	ln, err := sn.n.Listen(brokerPort)
	if err != nil {
		return err
	}
	sn.api = broker.NewServer(h, sn.log)
	sn.done.Go(func() { sn.api.Serve(ln) })
	return nil
}

func (sn *sessionNet) brokerRequest(ri broker.RequestInfo) {
	if ri.Status >= 200 && ri.Status < 400 {
		return
	}
	sn.r.systemLine(fmt.Sprintf("model API: %s %s answered %d after %s", ri.Method, logPath(ri.Path), ri.Status, ri.Duration.Round(time.Millisecond)))
}

// logPath writes a request's path for a line of Sandbar's own log. The
// guest chooses it, decoded (%0A is a line break): anything but printable
// ASCII gets it quoted, so it cannot start a line that reads as Sandbar's.
func logPath(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x21 || p[i] > 0x7e {
			return strconv.QuoteToASCII(p)
		}
	}
	return p
}

// decide is the policy's word, as the network asks for it.
func (sn *sessionNet) decide(d netstack.Dest) netstack.Verdict {
	dec := sn.pol.Load().Decide(policy.Dest{Name: d.Name, Addr: d.Addr, Port: d.Port, Proto: policy.Proto(d.Proto)})
	v := netstack.Verdict{Allow: dec.Allow, Reason: dec.Reason}
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

// intercept hands HTTPS connections to a host a brokered secret is bound
// to to the broker.
func (sn *sessionNet) intercept(d netstack.Dest) netstack.Interceptor {
	r := sn.r
	if r.setup.interceptor == nil || d.Proto != netstack.TCP || d.Name == "" {
		return nil
	}
	bound := false
	for i, c := range r.setup.creds.intercept {
		if strings.EqualFold(c.Host, d.Name) && r.setup.creds.ports[i] == d.Port {
			bound = true
		}
	}
	if !bound {
		return nil
	}
	return func(ctx context.Context, guest net.Conn, dial func(context.Context) (net.Conn, error)) {
		if err := r.setup.interceptor.Serve(ctx, guest, broker.Target{Host: d.Name, Port: d.Port, Dial: dial}); err != nil {
			sn.log.Debug("brokered HTTPS connection", "host", d.Name, "err", err)
		}
	}
}

// attempt records a connection attempt: denials go to the log and to
// subscribers (once a minute per destination, see logOnce); every attempt
// is counted in the store by the flusher.
func (sn *sessionNet) attempt(a netstack.Attempt) {
	host := a.Dest.Name
	if host == "" {
		host = a.Dest.Addr.String()
	}
	k := attemptKey{proto: string(a.Dest.Proto), host: host, port: a.Dest.Port, allowed: a.Verdict.Allow}
	rec := store.NetAttempt{
		Proto: k.proto, Host: host, Port: int(k.port), Allowed: k.allowed,
		Reason: a.Verdict.Reason, Rule: a.Verdict.Rule, First: a.Time, Last: a.Time, Count: 1,
	}
	if a.Dest.Name != "" && a.Dest.Addr.IsValid() {
		rec.Addr = a.Dest.Addr.String()
	}
	if a.Err != nil {
		rec.Error = a.Err.Error()
	}
	sn.mu.Lock()
	if p, ok := sn.attempts[k]; ok {
		p.Count++
		p.Last, p.Reason, p.Rule, p.Error, p.Addr = rec.Last, rec.Reason, rec.Rule, rec.Error, rec.Addr
	} else if len(sn.attempts) < store.MaxNetAttempts {
		sn.attempts[k] = &rec
	}
	// A denial (or a failure) is told once a minute per destination, and
	// not while MaxNetAttempts destinations were told in the last minute
	// (one note says so): a guest trying a million names, or a datagram a
	// millisecond, cannot flood the log or the windows; the store still
	// counts what it can.
	logIt, full := false, false
	if !k.allowed || a.Err != nil {
		logIt = sn.logOnce(k, a.Time)
		if !logIt && len(sn.logged) >= store.MaxNetAttempts && !sn.overflow {
			sn.overflow, full = true, true
		}
	}
	sn.mu.Unlock()
	if full {
		sn.r.systemLine(fmt.Sprintf("network: the VM tried more than %d destinations within a minute; further denials are counted in `sandbar net %s` but not logged", store.MaxNetAttempts, short(sn.r.id)))
	}
	if logIt {
		sn.r.systemLine(describeAttempt(sn.r.id, a))
		if !k.allowed {
			sn.r.m.hub.publish(Event{Session: sn.r.id, Time: a.Time, Kind: EventNet, Net: &rec})
		}
	}
	select {
	case sn.wake <- struct{}{}:
	default:
	}
}

// logOnce says whether to log (and tell subscribers of) an attempt at k
// now: the first time, then once a minute. The guest makes attempts as
// fast as it sends datagrams, to destinations of its choosing, so what is
// remembered is bounded: when MaxNetAttempts destinations were logged in
// the last minute, a new one is counted in the store alone. sn.mu is held.
func (sn *sessionNet) logOnce(k attemptKey, now time.Time) bool {
	if last, ok := sn.logged[k]; ok {
		if now.Sub(last) <= time.Minute {
			return false
		}
		sn.logged[k] = now
		return true
	}
	if len(sn.logged) >= store.MaxNetAttempts && now.Sub(sn.pruned) > time.Second {
		sn.pruned = now
		for old, last := range sn.logged {
			if now.Sub(last) > time.Minute {
				delete(sn.logged, old)
			}
		}
	}
	if len(sn.logged) >= store.MaxNetAttempts {
		return false
	}
	sn.logged[k] = now
	return true
}

// describeAttempt is the log line of a denied or failed attempt.
func describeAttempt(id string, a netstack.Attempt) string {
	dest := a.Dest.String()
	if !a.Verdict.Allow {
		rule := policy.AllowRuleFor(policy.Dest{Name: a.Dest.Name, Addr: a.Dest.Addr, Port: a.Dest.Port, Proto: policy.Proto(a.Dest.Proto)}, policy.SourceSession)
		if rule.Host == "" {
			return fmt.Sprintf("network: denied %s: %s", dest, a.Verdict.Reason)
		}
		return fmt.Sprintf("network: denied %s: %s. To allow it for this session: sandbar net %s allow %s", dest, a.Verdict.Reason, short(id), strings.TrimPrefix(rule.String(), "allow "))
	}
	return fmt.Sprintf("network: %s allowed but not reached: %v", dest, a.Err)
}

// flusher writes the counted attempts to the store every second.
func (sn *sessionNet) flusher() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-sn.stop:
			sn.flush()
			return
		case <-t.C:
			sn.flush()
		}
	}
}

func (sn *sessionNet) flush() {
	sn.mu.Lock()
	batch := make([]store.NetAttempt, 0, len(sn.attempts))
	for _, a := range sn.attempts {
		batch = append(batch, *a)
	}
	clear(sn.attempts)
	sn.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if _, err := sn.r.m.cfg.Store.RecordNetAttempts(context.Background(), sn.r.id, batch); err != nil {
		sn.log.Warn("record network attempts", "err", err)
	}
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

// guestPorts follows the ports the guest listens on (its ports event):
// a new one is published (unless store.SettingPublishPorts is off), one that
// closed is unpublished; ports a person published stay.
func (sn *sessionNet) guestPorts(ports []protocol.Port) {
	if v, _, _ := sn.r.m.cfg.Store.Setting(context.Background(), store.SettingPublishPorts); v == "off" {
		return
	}
	listening := map[uint16]bool{}
	for _, p := range ports {
		if p.Port != 0 {
			listening[p.Port] = true
		}
	}
	sn.mu.Lock()
	var gone, fresh []uint16
	for g := range sn.ports {
		if !listening[g] {
			gone = append(gone, g)
		}
	}
	for g := range listening {
		_, auto := sn.ports[g]
		_, manual := sn.manual[g]
		if !auto && !manual {
			fresh = append(fresh, g)
		}
	}
	sn.mu.Unlock()
	slices.Sort(fresh)
	for _, g := range gone {
		if sn.unpublish(g) {
			sn.r.systemLine(fmt.Sprintf("ports: guest port %d closed; no longer published", g))
		}
	}
	for _, g := range fresh {
		p, err := sn.publish(g, 0, false)
		if err != nil {
			sn.r.systemLine(fmt.Sprintf("ports: guest port %d could not be published: %v", g, err))
			continue
		}
		sn.r.systemLine(fmt.Sprintf("ports: guest port %d is published at http://localhost:%d", g, p.Host))
	}
}

// sessionMAC is a session's stable, locally administered unicast MAC.
func sessionMAC(id string) net.HardwareAddr {
	mac := net.HardwareAddr{0x5a, 0x94, 0xef, 0, 0, 0}
	for i := 0; i < len(id); i++ {
		mac[3+i%3] ^= id[i] * byte(31*(i+1))
	}
	return mac
}
