package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestProjectSettings(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, dbPath(t))
	p, _ := seed(t, s)
	if _, ok, err := s.ProjectSetting(ctx, p.ID, ProjectNetwork); ok || err != nil {
		t.Fatalf("unset setting: %v, %v", ok, err)
	}
	for _, v := range []string{"allow a.example:22", "mode open\nallow b.example"} {
		if err := s.SetProjectSetting(ctx, p.ID, ProjectNetwork, v); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.ProjectSetting(ctx, p.ID, ProjectNetwork); !ok || err != nil || got != v {
			t.Errorf("after set %q: %q, %v, %v", v, got, ok, err)
		}
	}
	if err := s.SetProjectSetting(ctx, 999, ProjectNetwork, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a setting of an unknown project: %v, want ErrNotFound", err)
	}
	if err := s.DeleteProjectSetting(ctx, p.ID, ProjectNetwork); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ProjectSetting(ctx, p.ID, ProjectNetwork); ok {
		t.Error("the setting is still there after delete")
	}
}

func TestSessionNetRules(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, dbPath(t))
	_, x := seed(t, s)
	got, err := s.UpdateSessionNetRules(ctx, x.ID, func(old string) (string, error) { return old + "allow a.example:80\n", nil })
	if err != nil || got != "allow a.example:80\n" {
		t.Fatalf("update: %q, %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateSessionNetRules(ctx, x.ID, func(string) (string, error) { return "lost", boom }); !errors.Is(err, boom) {
		t.Errorf("a failing update: %v", err)
	}
	if r, err := s.SessionNetRules(ctx, x.ID); err != nil || r != "allow a.example:80\n" {
		t.Errorf("rules after a failed update: %q, %v", r, err)
	}
	if _, err := s.SessionNetRules(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("rules of an unknown session: %v", err)
	}
}

func TestNetAttempts(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, dbPath(t))
	_, x := seed(t, s)
	t0 := time.Unix(1700000000, 0)
	denied := NetAttempt{Proto: "tcp", Host: "evil.example", Port: 443, Reason: "not in the allowlist", Last: t0}
	if _, err := s.RecordNetAttempts(ctx, x.ID, []NetAttempt{denied, denied, {Proto: "tcp", Host: "ok.example", Port: 443, Allowed: true, Last: t0.Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	later := denied
	later.Last, later.Count = t0.Add(time.Minute), 3
	if _, err := s.RecordNetAttempts(ctx, x.ID, []NetAttempt{later}); err != nil {
		t.Fatal(err)
	}
	all, err := s.NetAttempts(ctx, x.ID, 0)
	if err != nil || len(all) != 2 {
		t.Fatalf("attempts: %+v, %v", all, err)
	}
	if a := all[0]; a.Host != "evil.example" || a.Count != 5 || a.Allowed || !a.First.Equal(t0) || !a.Last.Equal(t0.Add(time.Minute)) || a.Reason != "not in the allowlist" {
		t.Errorf("latest attempt: %+v; want evil.example counted 5 times from t0 to t0+1m", a)
	}
	if a := all[1]; a.Host != "ok.example" || !a.Allowed || a.Count != 1 {
		t.Errorf("older attempt: %+v", a)
	}

	// A guest trying endless new names is bounded.
	var many []NetAttempt
	for i := range MaxNetAttempts + 10 {
		many = append(many, NetAttempt{Proto: "udp", Host: fmt.Sprintf("n%d.example", i), Port: 53, Last: t0})
	}
	dropped, err := s.RecordNetAttempts(ctx, x.ID, many)
	if err != nil || dropped != 12 {
		t.Errorf("recording %d new destinations beside 2: dropped %d, %v; want 12", len(many), dropped, err)
	}
	if all, _ := s.NetAttempts(ctx, x.ID, 0); len(all) != MaxNetAttempts {
		t.Errorf("%d destinations kept, want %d", len(all), MaxNetAttempts)
	}
	if a, _ := s.NetAttempts(ctx, x.ID, 1); len(a) != 1 || a[0].Host != "evil.example" {
		t.Errorf("limit 1: %+v", a)
	}

	if _, err := s.RecordNetAttempts(ctx, "nope", []NetAttempt{denied}); !errors.Is(err, ErrNotFound) {
		t.Errorf("attempts of an unknown session: %v", err)
	}
	if err := s.DeleteSession(ctx, x.ID); err != nil {
		t.Fatal(err)
	}
	if a, err := s.NetAttempts(ctx, x.ID, 0); err != nil || len(a) != 0 {
		t.Errorf("attempts outlive their session: %d, %v", len(a), err)
	}
}

func TestSecretBrokers(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, dbPath(t))
	for _, n := range []string{"GITHUB_TOKEN", "NPM_TOKEN"} {
		if err := s.AddSecretName(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSecretBroker(ctx, "GITHUB_TOKEN", SecretBroker{Host: "github.com", Header: "Authorization"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSecretBroker(ctx, "NOPE", SecretBroker{Host: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("binding an unknown secret: %v", err)
	}
	b, err := s.SecretBrokers(ctx)
	if err != nil || len(b) != 1 || b["GITHUB_TOKEN"] != (SecretBroker{Host: "github.com", Header: "Authorization"}) {
		t.Errorf("brokers: %+v, %v", b, err)
	}
	if err := s.SetSecretBroker(ctx, "GITHUB_TOKEN", SecretBroker{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.SecretBrokers(ctx); len(b) != 0 {
		t.Errorf("after unbinding: %+v", b)
	}
	// Removing a secret's name removes its binding with it.
	s.SetSecretBroker(ctx, "NPM_TOKEN", SecretBroker{Host: "registry.example", Header: "Authorization"})
	s.RemoveSecretName(ctx, "NPM_TOKEN")
	s.AddSecretName(ctx, "NPM_TOKEN")
	if b, _ := s.SecretBrokers(ctx); len(b) != 0 {
		t.Errorf("a secret set again keeps an old binding: %+v", b)
	}
}
