package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/store"
)

// NetScope is where a network rule is kept.
type NetScope string

// Scopes of network rules.
const (
	// ScopeSession: for one session (its own rules).
	ScopeSession NetScope = "session"
	// ScopeProject: for every session of a project (its settings).
	ScopeProject NetScope = "project"
	// ScopeSandbar: for every session (Sandbar's settings).
	ScopeSandbar NetScope = "sandbar"
)

// source is where a scope's rules come from, as the policy names it; ""
// for a scope that is none.
func (s NetScope) source() policy.Source {
	switch s {
	case ScopeSession:
		return policy.SourceSession
	case ScopeProject:
		return policy.SourceProject
	case ScopeSandbar:
		return policy.SourceSandbar
	}
	return ""
}

// ParseNetScope reads a scope's name.
func ParseNetScope(s string) (NetScope, error) {
	switch sc := NetScope(s); sc {
	case ScopeSession, ScopeProject, ScopeSandbar:
		return sc, nil
	}
	return "", fmt.Errorf("%q is not a scope: use session, project or sandbar: %w", s, ErrBadOptions)
}

// NetAttempts returns the connections a session's guest tried, the
// latest first, with how often each was tried and what the policy said.
func (m *Manager) NetAttempts(ctx context.Context, ref string) ([]store.NetAttempt, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return nil, err
	}
	return m.cfg.Store.NetAttempts(ctx, s.ID, 0)
}

// AddNetRule adds a rule, "allow TARGET" or "deny TARGET" with TARGET in
// app/net/policy's syntax (HOST[:PORTS][/PROTO]), to the session ref's own
// rules, its project's or Sandbar's, as scope says. The sessions it
// concerns that run here follow it from their next connection, without a
// restart. A rule already there is not added twice. It returns the rule
// as kept.
func (m *Manager) AddNetRule(ctx context.Context, ref string, scope NetScope, action, target string) (policy.Rule, error) {
	switch action {
	case string(policy.Allow), string(policy.Deny):
	default:
		return policy.Rule{}, fmt.Errorf("%q is not allow or deny: %w", action, ErrBadOptions)
	}
	src := scope.source()
	if src == "" {
		return policy.Rule{}, fmt.Errorf("%q is not a scope: use session, project or sandbar: %w", scope, ErrBadOptions)
	}
	rule, err := policy.ParseRule(action+" "+strings.TrimSpace(target), src)
	if err != nil {
		return policy.Rule{}, fmt.Errorf("%w: %w", err, ErrBadOptions)
	}
	line := rule.String()
	addLine := func(text string) (string, error) {
		for _, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) == line {
				return text, nil
			}
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + line + "\n", nil
	}
	switch scope {
	case ScopeSession:
		s, err := m.findIntact(ctx, ref)
		if err != nil {
			return rule, err
		}
		if _, err := m.cfg.Store.UpdateSessionNetRules(ctx, s.ID, addLine); err != nil {
			return rule, err
		}
		m.reloadNet(ctx, func(r *run) bool { return r.id == s.ID })
		return rule, nil
	case ScopeProject:
		s, err := m.findIntact(ctx, ref)
		if err != nil {
			return rule, err
		}
		text, _, err := m.cfg.Store.ProjectSetting(ctx, s.ProjectID, store.ProjectNetwork)
		if err != nil {
			return rule, err
		}
		text, _ = addLine(text)
		return rule, m.SetNetworkRules(ctx, scope, "", text, s.ProjectID)
	}
	text, err := m.NetworkRules(ctx, scope, "")
	if err != nil {
		return rule, err
	}
	text, _ = addLine(text)
	return rule, m.SetNetworkRules(ctx, scope, "", text, 0)
}

// netProject finds a project by id, name or path.
func (m *Manager) netProject(ctx context.Context, ref string) (store.Project, error) {
	return m.findProject(ctx, ref)
}

// NetworkRules returns the rule text of Sandbar's settings (ScopeSandbar),
// of project ref's (ScopeProject: its id, name or path), or of session
// ref's own (ScopeSession).
func (m *Manager) NetworkRules(ctx context.Context, scope NetScope, ref string) (string, error) {
	switch scope {
	case ScopeSandbar:
		v, _, err := m.cfg.Store.Setting(ctx, store.SettingNetwork)
		return v, err
	case ScopeProject:
		p, err := m.netProject(ctx, ref)
		if err != nil {
			return "", err
		}
		v, _, err := m.cfg.Store.ProjectSetting(ctx, p.ID, store.ProjectNetwork)
		return v, err
	case ScopeSession:
		s, err := m.findIntact(ctx, ref)
		if err != nil {
			return "", err
		}
		return m.cfg.Store.SessionNetRules(ctx, s.ID)
	}
	return "", fmt.Errorf("%q is not a scope: %w", scope, ErrBadOptions)
}

// SetNetworkRules replaces the rule text of a scope (see NetworkRules).
// A text that does not parse is refused with the line and what is wrong,
// and nothing changes. projectID, when known, spares a look-up.
func (m *Manager) SetNetworkRules(ctx context.Context, scope NetScope, ref, text string, projectID int64) error {
	src := scope.source()
	if src == "" {
		return fmt.Errorf("%q is not a scope: %w", scope, ErrBadOptions)
	}
	if _, err := parseRules(text, src, string(scope)+" network rules"); err != nil {
		return err
	}
	switch scope {
	case ScopeSandbar:
		if err := m.cfg.Store.SetSetting(ctx, store.SettingNetwork, text); err != nil {
			return err
		}
		m.reloadNet(ctx, func(*run) bool { return true })
	case ScopeProject:
		if projectID == 0 {
			p, err := m.netProject(ctx, ref)
			if err != nil {
				return err
			}
			projectID = p.ID
		}
		if err := m.cfg.Store.SetProjectSetting(ctx, projectID, store.ProjectNetwork, text); err != nil {
			return err
		}
		m.reloadNet(ctx, func(r *run) bool { return r.s.ProjectID == projectID })
	case ScopeSession:
		s, err := m.findIntact(ctx, ref)
		if err != nil {
			return err
		}
		if _, err := m.cfg.Store.UpdateSessionNetRules(ctx, s.ID, func(string) (string, error) { return text, nil }); err != nil {
			return err
		}
		m.reloadNet(ctx, func(r *run) bool { return r.id == s.ID })
	}
	return nil
}

// ReloadNetworks composes the policy of every session running here again:
// for a process that changed rules in the store without this one.
func (m *Manager) ReloadNetworks(ctx context.Context) error {
	m.reloadNet(ctx, func(*run) bool { return true })
	return nil
}

// reloadNet recomposes the policy of the running sessions that match.
func (m *Manager) reloadNet(ctx context.Context, match func(*run) bool) {
	m.mu.Lock()
	var runs []*run
	for _, r := range m.runs {
		if match(r) {
			runs = append(runs, r)
		}
	}
	m.mu.Unlock()
	for _, r := range runs {
		r.mu.Lock()
		sn := r.net
		r.mu.Unlock()
		if sn == nil {
			continue
		}
		if err := sn.reload(ctx); err != nil {
			r.systemLine("network: the new rules were not taken: " + err.Error())
		}
	}
}

// ErrNoNetwork says a session has no network to publish ports on.
var ErrNoNetwork = errors.New("the session has no network")

// netOf is a running session's network.
func (m *Manager) netOf(ctx context.Context, ref string) (*sessionNet, error) {
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	sn := r.net
	r.mu.Unlock()
	if sn == nil {
		if !s.Limits.Network {
			return nil, fmt.Errorf("session %s runs without a network: %w", s.ID, ErrNoNetwork)
		}
		return nil, fmt.Errorf("session %s's VM is not running yet: %w", s.ID, ErrState)
	}
	return sn, nil
}

// Ports returns a running session's published ports.
func (m *Manager) Ports(ctx context.Context, ref string) ([]netstack.Port, error) {
	sn, err := m.netOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	return sn.n.Published(), nil
}

// PublishPort publishes a running session's guest port on the host's
// 127.0.0.1:host (0: the same number when free, else any). It stays until
// UnpublishPort or the VM stops, whether or not the guest listens.
func (m *Manager) PublishPort(ctx context.Context, ref string, guest, host uint16) (netstack.Port, error) {
	sn, err := m.netOf(ctx, ref)
	if err != nil {
		return netstack.Port{}, err
	}
	return sn.publish(guest, host, true)
}

// UnpublishPort closes a published port.
func (m *Manager) UnpublishPort(ctx context.Context, ref string, guest uint16) error {
	sn, err := m.netOf(ctx, ref)
	if err != nil {
		return err
	}
	if !sn.unpublish(guest) {
		return fmt.Errorf("guest port %d is not published: %w", guest, store.ErrNotFound)
	}
	return nil
}

// wellKnownPorts are host services a person's publish with no host port
// is never given the same number for (nor one below 1024): a typed
// "publish 5432" should not stand in for the person's own database the
// moment it is down.
var wellKnownPorts = []uint16{1433, 1521, 2375, 2376, 3306, 5432, 5672, 5900, 6379, 6443, 8200, 8500, 9000, 9092, 9200, 11211, 27017}

// publish publishes guest on the host. A port the guest published by
// listening (manual false) always gets a port of the kernel's choosing:
// the guest picks which ports it listens on, and the same number on the
// host's loopback is where the person's own programs, scripts and
// browser tabs connect (a dev server's 3000 or 8080, the node inspector's
// 9229, ollama's 11434, adb's 5037) whenever their own server is not
// running, so the guest would receive their requests, cookies and tokens.
// A port a person publishes gets host, or with host 0 its own number
// when free and not well known, else any free port.
func (sn *sessionNet) publish(guest, host uint16, manual bool) (netstack.Port, error) {
	var p netstack.Port
	var err error
	switch {
	case host != 0:
		p, err = sn.n.Publish(guest, host)
	case manual && guest >= 1024 && !slices.Contains(wellKnownPorts, guest):
		if p, err = sn.n.Publish(guest, guest); errors.Is(err, netstack.ErrPortInUse) {
			p, err = sn.n.Publish(guest, 0)
		}
	default:
		p, err = sn.n.Publish(guest, 0)
	}
	if err != nil {
		return p, err
	}
	sn.mu.Lock()
	if manual {
		// A person's port stays when the guest stops listening.
		delete(sn.ports, guest)
		sn.manual[guest] = p
	} else {
		sn.ports[guest] = p
	}
	sn.mu.Unlock()
	sn.portsChanged()
	return p, nil
}

func (sn *sessionNet) unpublish(guest uint16) bool {
	sn.mu.Lock()
	delete(sn.manual, guest)
	delete(sn.ports, guest)
	sn.mu.Unlock()
	ok := sn.n.Unpublish(guest)
	if ok {
		sn.portsChanged()
	}
	return ok
}

// portsChanged tells subscribers the published ports.
func (sn *sessionNet) portsChanged() {
	sn.r.m.hub.publish(Event{Session: sn.r.id, Kind: EventPorts, Ports: sn.n.Published()})
}
