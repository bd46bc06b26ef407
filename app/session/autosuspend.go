package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sandbar/app/store"
)

// Auto-suspend: a session that has waited for the person longer than
// store.SettingAutoSuspend is suspended, so that it stops holding its
// memory and waking the host's CPU while nobody looks; a message,
// opening it or `sandbar resume` brings it back (ensureResumed). The
// engine checks its waiting sessions now and then (AutoSuspend); when a
// session began to wait is its run's waitingSince, by Config.Now.

// DefaultAutoSuspend is how long a session waits before it is suspended
// when the setting says nothing.
const DefaultAutoSuspend = 15 * time.Minute

// autoSuspendCheck is the longest between two checks; a short setting is
// checked more often (a quarter of it, at least every second), so that a
// session is suspended within a quarter of its wait past it.
const autoSuspendCheck = 30 * time.Second

// ReasonAutoSuspended is the reason of a session suspended after waiting
// for the person for d.
func ReasonAutoSuspended(d time.Duration) string {
	return autoSuspendedPrefix + roundWait(d) + " for your message, to give its memory back: a message, opening it or `sandbar resume` brings it back where it was"
}

// autoSuspendedPrefix begins ReasonAutoSuspended, which SuspendedWhy
// reads back.
const autoSuspendedPrefix = "suspended after waiting "

func roundWait(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.Round(time.Second).String()
}

// ParseAutoSuspend reads store.SettingAutoSuspend: whole minutes ("15"),
// a Go duration ("90s", "1h"), or "off" (or "0"), which is 0: never.
// An empty value is DefaultAutoSuspend. A bad one is an error that says
// what is wanted.
func ParseAutoSuspend(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "":
		return DefaultAutoSuspend, nil
	case "off", "0", "never":
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Minute, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("auto-suspend %q: give whole minutes (15), a duration (90s, 1h) or off", v)
}

// autoSuspendAfter is the setting in force; a bad value turns it off
// and says so in the log (the Settings window refuses one).
func (m *Manager) autoSuspendAfter(ctx context.Context) time.Duration {
	v, _, err := m.cfg.Store.Setting(ctx, store.SettingAutoSuspend)
	if err != nil {
		return 0
	}
	d, err := ParseAutoSuspend(v)
	if err != nil {
		m.log.Warn("auto-suspend is off", "err", err)
	}
	return d
}

// waitedTooLong reports whether a session that began to wait at since
// has waited at least after by now; never when it does not wait (since
// is zero) or auto-suspend is off (after is 0).
func waitedTooLong(since, now time.Time, after time.Duration) bool {
	return after > 0 && !since.IsZero() && now.Sub(since) >= after
}

// dueForSuspend lists the sessions this engine runs that have waited
// longer than after by now, and that can be saved: started, not paused
// on a full disk, and not already refused a suspend.
func (m *Manager) dueForSuspend(now time.Time, after time.Duration) []string {
	var due []string
	for _, id := range m.Running() {
		r := m.running(id)
		if r == nil {
			continue
		}
		r.mu.Lock()
		ok := r.started && r.pause == nil && !r.autoSuspendFailed && r.activity == ActivityWaiting &&
			waitedTooLong(r.waitingSince, now, after)
		r.mu.Unlock()
		if ok {
			due = append(due, id)
		}
	}
	return due
}

// autoSuspendOnce suspends the sessions due, and returns those it did.
// A session that cannot be saved is marked so that the next checks leave
// it running rather than trying, and logging, again; it is tried anew
// once it has worked and waited again.
func (m *Manager) autoSuspendOnce(ctx context.Context) []string {
	after := m.autoSuspendAfter(ctx)
	var done []string
	for _, id := range m.dueForSuspend(m.cfg.Now(), after) {
		if _, err := m.suspendAs(ctx, id, ReasonAutoSuspended(after)); err != nil {
			m.log.Warn("auto-suspend a waiting session: it runs on", "session", id, "err", err)
			if r := m.running(id); r != nil {
				r.mu.Lock()
				r.autoSuspendFailed = true
				r.mu.Unlock()
			}
			continue
		}
		m.log.Info("suspended a session that waited for the person", "session", id, "after", after)
		done = append(done, id)
	}
	return done
}

// AutoSuspend checks the waiting sessions now and then until the
// Manager closes or ctx ends: the engine's (engine.Listen starts it).
func (m *Manager) AutoSuspend(ctx context.Context) {
	m.loop(ctx, func(ctx context.Context) {
		for {
			every := autoSuspendCheck
			if after := m.autoSuspendAfter(ctx); after > 0 {
				every = min(max(after/4, time.Second), autoSuspendCheck)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			m.autoSuspendOnce(ctx)
		}
	})
}
