package store

import (
	"context"
	"errors"
	"testing"
)

// TestRepoTrust: decisions are kept per project and kind, the newest of
// each decision wins, and one hash has one answer: trusting what was
// ignored clears the ignore, and the other way round.
func TestRepoTrust(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p, err := s.AddProject(ctx, Project{Path: "/r"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.AddProject(ctx, Project{Path: "/q"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id int64) map[string]RepoTrust {
		t.Helper()
		l, err := s.RepoTrusts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]RepoTrust{}
		for _, r := range l {
			m[r.Kind+"/"+r.Decision] = r
		}
		return m
	}
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "network", Decision: TrustTrusted, Hash: "h1", Content: []byte("allow a.example\n")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "include", Decision: TrustIgnored, Hash: "i1"}); err != nil {
		t.Fatal(err)
	}
	m := get(p.ID)
	if r := m["network/trusted"]; r.Hash != "h1" || string(r.Content) != "allow a.example\n" || r.Decided.IsZero() {
		t.Errorf("network trusted: %+v", r)
	}
	if r := m["include/ignored"]; r.Hash != "i1" || len(m) != 2 {
		t.Errorf("decisions: %+v", m)
	}
	if n := len(get(q.ID)); n != 0 {
		t.Errorf("another project has %d decisions", n)
	}
	// A newer trust replaces the older; trusting the ignored content
	// clears its ignore.
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "network", Decision: TrustTrusted, Hash: "h2", Content: []byte("allow b.example\n")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "include", Decision: TrustTrusted, Hash: "i1", Content: []byte(".env\n")}); err != nil {
		t.Fatal(err)
	}
	m = get(p.ID)
	if m["network/trusted"].Hash != "h2" || m["include/trusted"].Hash != "i1" || len(m) != 2 {
		t.Errorf("after trusting again: %+v", m)
	}
	// Ignoring the trusted content withdraws the trust.
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "network", Decision: TrustIgnored, Hash: "h2"}); err != nil {
		t.Fatal(err)
	}
	if m = get(p.ID); m["network/ignored"].Hash != "h2" || m["network/trusted"].Hash != "" {
		t.Errorf("after ignoring the trusted content: %+v", m)
	}
	if err := s.SetRepoTrust(ctx, 999, RepoTrust{Kind: "network", Decision: TrustTrusted, Hash: "h"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown project: %v", err)
	}
	if err := s.SetRepoTrust(ctx, p.ID, RepoTrust{Kind: "network", Decision: "maybe", Hash: "h"}); err == nil {
		t.Error("a decision that is neither trusted nor ignored was recorded")
	}
	// They go with the project.
	if err := s.RemoveProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(get(p.ID)); n != 0 {
		t.Errorf("%d decisions outlived their project", n)
	}
}
