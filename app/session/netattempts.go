package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sandbar/app/net/broker"
	"sandbar/app/net/hostproxy"
	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/store"
)

// ProtoWrite is the Proto of a recorded attempt that was a write refused
// inside an allowed connection: a request to a host the policy allows for
// reads only (store.NetAttempt's Reason names its method and path). Allow
// for it adds "allow HOST[:PORT] write".
const ProtoWrite = "http"

// ProxyRefused reports whether a recorded attempt was one Sandbar's rules
// allowed and the host's proxy refused (its reason is the proxy's answer,
// hostproxy.RefusedError): no rule of Sandbar's would let it through.
func ProxyRefused(a store.NetAttempt) bool {
	return !a.Allowed && strings.HasPrefix(a.Reason, hostproxy.RefusedPrefix)
}

// WriteRule is the rule that lets writes through to a refused write's
// host and port (a NetAttempt of ProtoWrite): what Allow writes adds.
func WriteRule(a store.NetAttempt) (policy.Rule, error) {
	if a.Port <= 0 || a.Port > 65535 {
		return policy.Rule{}, fmt.Errorf("port %d is not a port", a.Port)
	}
	return policy.ParseRule("allow "+writeTarget(a.Host, uint16(a.Port))+" write", policy.SourceSession)
}

// refusedWrite records a write the broker refused on a read-only
// connection to d: the Network tab and `sandbar net` show it with Allow
// writes for this session.
func (sn *sessionNet) refusedWrite(d netstack.Dest, v netstack.Verdict, info broker.RequestInfo) {
	what := info.Method + " " + info.Path
	if info.What != "" && !strings.HasSuffix(info.What, " request") {
		what += " (" + info.What + ")"
	}
	d.Proto = ProtoWrite
	sn.attempt(netstack.Attempt{Time: time.Now(), Dest: d, Verdict: netstack.Verdict{
		Reason: what + ": writes are not allowed to this host: allow writes for this session",
		Rule:   v.Rule,
	}})
}

type attemptKey struct {
	proto, host string
	port        uint16
	allowed     bool
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
	if a.Dest.Proto == ProtoWrite {
		host := a.Dest.Name
		if host == "" {
			host = a.Dest.Addr.String()
		}
		return fmt.Sprintf("network: refused a write to %s: %s. To allow writes for this session: sandbar net %s allow %s write",
			dest, a.Verdict.Reason, short(id), writeTarget(host, a.Dest.Port))
	}
	if a.Verdict.Proxy {
		return fmt.Sprintf("network: Sandbar's rules allow %s, but this machine's proxy did not: %s", dest, a.Verdict.Reason)
	}
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
