package session

import (
	"context"
	"slices"
	"testing"
)

func TestNetSummaryFollowsTheRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agent := AgentSpec{Command: "sh", Args: []string{"-c", "echo hi"}}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, s.ID)
	base, err := f.m.NetSummary(ctx, s.ID)
	if err != nil || base.Mode != NetworkAllowlist || base.Allow == 0 || base.Deny != 0 || base.Session != 0 {
		t.Fatalf("with no rules: %+v, %v; want allowlist and the default allowlist only", base, err)
	}

	if err := f.m.SetNetworkRules(ctx, ScopeSandbar, "", "mode open\nallow a.example.com\ndeny b.example.com\n", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.AddNetRule(ctx, s.ID, ScopeSession, "allow", "c.example.com:8080"); err != nil {
		t.Fatal(err)
	}
	got, err := f.m.NetSummary(ctx, s.ID)
	if err != nil || got.Mode != NetworkOpen || got.Allow != base.Allow+2 || got.Deny != 1 || got.Session != 1 {
		t.Errorf("with Sandbar's and the session's rules: %+v, %v; want open, %d allows, 1 deny, 1 of the session's", got, err, base.Allow+2)
	}

	if err := f.m.SetNetworkRules(ctx, ScopeSession, s.ID, "mode off\n", 0); err != nil {
		t.Fatal(err)
	}
	got, err = f.m.NetSummary(ctx, s.ID)
	if err != nil || got.Mode != NetworkOpen || !slices.ContainsFunc(got.Notes, func(n string) bool { return n != "" }) {
		t.Errorf("a mode in the session's rules: %+v, %v; want it ignored with a note", got, err)
	}

	off, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: agent, MemoryMiB: 512, Network: NetworkOff})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, off.ID)
	if got, err := f.m.NetSummary(ctx, off.ID); err != nil || got.Mode != NetworkOff {
		t.Errorf("a session started with the network off: %+v, %v", got, err)
	}
}
