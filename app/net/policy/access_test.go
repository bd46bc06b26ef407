package policy

import "testing"

// TestDecideAccess checks which rule decides what a connection may carry:
// the default allowlist's registries and forges are read-only, the
// person's own bare or write rule widens them, a repository's does not,
// and a read rule of the person's narrows a host they name.
func TestDecideAccess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     Mode
		s        settings
		d        Dest
		rule     string
		readOnly bool
	}{
		{name: "a default forge is read-only",
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com read", readOnly: true},
		{name: "a default archive over HTTP is read-only",
			d: Dest{Name: "deb.debian.org", Port: 80}, rule: "allow deb.debian.org:80 read", readOnly: true},
		{name: "the model API takes writes",
			d: Dest{Name: "api.anthropic.com", Port: 443}, rule: "allow api.anthropic.com"},
		{name: "the session's write widens a default", s: settings{session: "allow github.com write"},
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com write"},
		{name: "the project's bare rule widens a default", s: settings{project: "allow github.com"},
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com"},
		{name: "Sandbar's wildcard write widens a default", s: settings{sandbar: "allow *.github.com:* write"},
			d: Dest{Name: "codeload.github.com", Port: 443}, rule: "allow *.github.com:* write"},
		{name: "a repository's bare rule does not widen a default", s: settings{repo: "allow github.com"},
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com read", readOnly: true},
		{name: "a repository's write does not widen a default", s: settings{repo: "allow github.com write"},
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com read", readOnly: true},
		{name: "a repository's rule decides a host the defaults leave out", s: settings{repo: "allow git.example.org write"},
			d: Dest{Name: "git.example.org", Port: 443}, rule: "allow git.example.org write"},
		{name: "the person's read rule for a new host", s: settings{project: "allow registry.example read"},
			d: Dest{Name: "registry.example", Port: 443}, rule: "allow registry.example read", readOnly: true},
		{name: "a read rule first, a write for another port", s: settings{project: "allow registry.example read\nallow registry.example:8443 write"},
			d: Dest{Name: "registry.example", Port: 443}, rule: "allow registry.example read", readOnly: true},
		{name: "with defaults off, the person's bare rule", s: settings{project: "defaults off\nallow github.com"},
			d: Dest{Name: "github.com", Port: 443}, rule: "allow github.com"},
		{name: "a mapped loopback name, read", s: settings{project: "host git.test 127.0.0.1\nallow git.test:8080 read"},
			d: Dest{Name: "git.test", Addr: addr("127.0.0.1"), Port: 8080}, rule: "allow git.test:8080 read", readOnly: true},
		{name: "a mapped loopback name, widened for the session", s: settings{project: "host git.test 127.0.0.1\nallow git.test:8080 read", session: "allow git.test:8080 write"},
			d: Dest{Name: "git.test", Addr: addr("127.0.0.1"), Port: 8080}, rule: "allow git.test:8080 write"},
		{name: "mode open is open", s: settings{project: "mode open"},
			d: Dest{Name: "github.com", Port: 443}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, notes := compose(t, tc.mode, tc.s)
			got := p.Decide(tc.d)
			if !got.Allow {
				t.Fatalf("Decide(%+v) denied: %s (notes %q)", tc.d, got.Reason, notes)
			}
			rule := ""
			if got.Rule != nil {
				rule = got.Rule.String()
			}
			if rule != tc.rule || got.ReadOnly != tc.readOnly {
				t.Errorf("Decide(%+v): rule %q, read-only %v; want %q, read-only %v", tc.d, rule, got.ReadOnly, tc.rule, tc.readOnly)
			}
		})
	}
}

// TestAccessRoundTrips checks that Compose, which reads every rule again
// through its String, keeps a rule's access.
func TestAccessRoundTrips(t *testing.T) {
	for _, text := range []string{"allow github.com read", "allow registry.example:8443 write", "allow 203.0.113.7:80 read"} {
		p, notes := compose(t, "", settings{project: text})
		rules := p.Rules()
		if last := rules[len(rules)-1]; last.String() != text || len(notes) != 0 {
			t.Errorf("%q composed to %q, notes %q", text, last.String(), notes)
		}
	}
}
