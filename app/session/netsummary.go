package session

import (
	"context"

	"sandbar/app/net/policy"
)

// NetSummary is a session's network policy as a person reads it: the
// mode in force and how many rules make it.
type NetSummary struct {
	// Mode is allowlist, open or off.
	Mode string
	// Allow and Deny count the rules in force, the default allowlist
	// included; Session counts those of the session's own rules (what
	// "Allow for this session" added).
	Allow, Deny, Session int
	// Notes say what of the rules was ignored or narrowed, and why.
	Notes []string
}

// NetSummary composes session ref's network policy from its layers as
// they are now, as a running session does when its rules change, and
// says what it is. It reads and changes nothing else: the session
// window shows it above the attempts.
func (m *Manager) NetSummary(ctx context.Context, ref string) (NetSummary, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return NetSummary{}, err
	}
	p, notes, err := m.composePolicy(ctx, s)
	if err != nil {
		return NetSummary{}, err
	}
	sum := NetSummary{Mode: string(p.Mode()), Notes: notes}
	for _, r := range p.Rules() {
		if r.Action == policy.Deny {
			sum.Deny++
		} else {
			sum.Allow++
		}
		if r.Source == policy.SourceSession {
			sum.Session++
		}
	}
	return sum, nil
}
