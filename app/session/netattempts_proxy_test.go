package session

import (
	"testing"

	"sandbar/app/net/hostproxy"
	"sandbar/app/store"
)

// TestProxyRefused: an attempt the host's proxy refused is told apart
// from one Sandbar's rules denied (Allow would change nothing for it).
func TestProxyRefused(t *testing.T) {
	refused := (&hostproxy.RefusedError{Proxy: "127.0.0.1:3128", Target: "203.0.113.7:443", Answer: "403 Forbidden"}).Error()
	for _, tc := range []struct {
		a    store.NetAttempt
		want bool
	}{
		{store.NetAttempt{Reason: refused}, true},
		{store.NetAttempt{Reason: `denied: "example.com" is not in the allowlist`}, false},
		{store.NetAttempt{Allowed: true, Reason: refused}, false},
	} {
		if got := ProxyRefused(tc.a); got != tc.want {
			t.Errorf("ProxyRefused(%q) = %v, want %v", tc.a.Reason, got, tc.want)
		}
	}
}
