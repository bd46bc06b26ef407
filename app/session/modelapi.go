package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"sandbar/app/net/policy"
	"sandbar/app/store"
)

// ErrNoModelAPI says Claude Code could not reach its model API with the
// network its session would have: the network is off, or its rules turn
// it off or deny the API. The error's words say what to turn on; the New
// Session window offers to do it.
var ErrNoModelAPI = errors.New("the agent cannot reach its model API")

// modelAPIBlocked says why a session with limits l and policy p could
// not reach the model API at upstream through Sandbar's broker; "" when
// it can. The broker serves the API past the allowlist (the key stays on
// the host), so only a network that is off, or a deny rule that names
// the API, keeps it out.
func modelAPIBlocked(l store.Limits, p *policy.Policy, upstream *url.URL) string {
	if !l.Network {
		return "the session's network is off"
	}
	if p == nil {
		return ""
	}
	if p.Mode() == policy.ModeOff {
		return "the network rules turn the network off (a mode off line in Sandbar's, the project's or the repository's rules)"
	}
	port := 443
	if upstream.Scheme == "http" {
		port = 80
	}
	if n, err := strconv.Atoi(upstream.Port()); err == nil {
		port = n
	}
	d := p.Decide(policy.Dest{Name: upstream.Hostname(), Port: uint16(port), Proto: policy.TCP})
	if !d.Allow && d.Rule != nil && d.Rule.Action == policy.Deny {
		return d.Reason
	}
	return ""
}

// modelAPIError is the refusal of a Claude Code session that could not
// reach its model API, saying what to do.
func modelAPIError(l store.Limits, why string) error {
	fix := "remove that rule (Settings → Network), or start a session with another agent"
	switch {
	case !l.Network:
		fix = "turn the network on (Allowlist is enough) to start it"
	case l.NetMode == "":
		fix = "choose Allowlist or Open for this session to start it"
	}
	return fmt.Errorf("Claude Code could not reach the Anthropic API: %s: %s: %w", why, fix, ErrNoModelAPI)
}

// gateModelAPI answers the guest's model-API requests with the API's own
// 403 while the session's rules (they may change as it runs) keep the
// API out, so the agent says so rather than hanging.
func (sn *sessionNet) gateModelAPI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		why := modelAPIBlocked(sn.r.s.Limits, sn.pol.Load(), sn.r.setup.upstream)
		if why == "" {
			next.ServeHTTP(w, req)
			return
		}
		sn.r.systemLine("model API: refused: " + why)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{
			"type": "permission_error", "message": "Sandbar: the session's network rules keep the model API out: " + why}})
	})
}
