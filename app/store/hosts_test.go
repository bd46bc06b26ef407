package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHosts: a host is added once, listed, checked, and removed only
// while no live session runs on it; the refusal names the sessions.
func TestHosts(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, dbPath(t))
	_, x := seed(t, s) // running
	for _, bad := range []string{"", "local", "AUTO", "a b", "x/y", strings.Repeat("n", 41)} {
		if err := s.AddHost(ctx, Host{Name: bad, URL: "ssh://a@b"}); err == nil {
			t.Errorf("AddHost(%q) took a bad name", bad)
		}
	}
	if err := s.AddHost(ctx, Host{Name: "big-box", URL: "ssh://me@box:2222", Dir: "/srv/sb"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHost(ctx, Host{Name: "big-box", URL: "ssh://me@other"}); !errors.Is(err, ErrExists) {
		t.Errorf("second add: %v, want ErrExists", err)
	}
	at := time.Unix(1800000000, 0)
	if err := s.SetHostStatus(ctx, "big-box", "ready: libvirt 9.0.0", at); err != nil {
		t.Fatal(err)
	}
	hs, err := s.Hosts(ctx)
	if err != nil || len(hs) != 1 || hs[0].URL != "ssh://me@box:2222" || hs[0].Dir != "/srv/sb" || hs[0].Status != "ready: libvirt 9.0.0" || !hs[0].Checked.Equal(at) {
		t.Fatalf("Hosts = %+v, %v", hs, err)
	}
	if _, err := s.Host(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Host(nope): %v", err)
	}

	if h, err := s.SessionHost(ctx, x.ID); err != nil || h != "" {
		t.Errorf("SessionHost before = %q, %v", h, err)
	}
	if err := s.SetSessionHost(ctx, x.ID, "big-box"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSessionHost(ctx, "no-such", "big-box"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetSessionHost(no-such): %v", err)
	}
	err = s.RemoveHost(ctx, "big-box")
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), x.ID) {
		t.Fatalf("RemoveHost with a running session: %v, want ErrInUse naming %s", err, x.ID)
	}
	if _, err := s.UpdateSession(ctx, x.ID, func(x *Session) error { x.State = StateInterrupted; return nil }); err != nil {
		t.Fatal(err)
	}
	if m, err := s.SessionHosts(ctx); err != nil || m[x.ID] != "big-box" {
		t.Errorf("SessionHosts = %v, %v", m, err)
	}
	if err := s.RemoveHost(ctx, "big-box"); err != nil {
		t.Fatalf("RemoveHost with no live session: %v", err)
	}
	if err := s.RemoveHost(ctx, "big-box"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second RemoveHost: %v", err)
	}
}
