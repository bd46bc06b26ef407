package session

import (
	"context"
	"strings"
	"time"

	"sandbar/app/store"
)

// Keeping sessions across the engine's end and the host's sleep: the
// engine suspends what it runs (suspend.go) and says why in each
// session's reason, which is also how the next engine, or the wake,
// tells the sessions it promised to resume from those a person suspended
// or that were suspended for waiting too long (autosuspend.go): those
// stay suspended until someone asks for them.

// KeepPolicy is what quitting the engine does with its running sessions
// (store.SettingKeepSessions).
type KeepPolicy string

const (
	// KeepStop saves each session's work and stops it, as before: its
	// agent starts anew on a restart. The default.
	KeepStop KeepPolicy = "stop"
	// KeepResume suspends each session and the next engine resumes it.
	KeepResume KeepPolicy = "resume"
	// KeepSuspended suspends each session and leaves it suspended, with
	// its Resume, until a person asks for it.
	KeepSuspended KeepPolicy = "suspended"
)

// Reasons of sessions the engine suspended on its own.
const (
	// ReasonKept: the engine quit with KeepResume.
	ReasonKept = "kept when Sandbar quit: its VM's memory is saved in its directory, and it resumes where it was when Sandbar starts"
	// ReasonKeptSuspended: the engine quit with KeepSuspended.
	ReasonKeptSuspended = "kept suspended when Sandbar quit: `sandbar resume`, opening it or a message brings it back where it was"
	// ReasonSlept: the host went to sleep; its wake, or the next
	// engine's start, resumes it.
	ReasonSlept = "suspended while the computer slept: it resumes where it was when the computer wakes"
)

// keepTimeout bounds the suspends of a quit that keeps sessions; what is
// not saved by then is stopped as before.
const keepTimeout = 3 * time.Minute

// ParseKeepPolicy reads the setting's value; anything but the two that
// keep is KeepStop, what quitting did before there was a choice.
func ParseKeepPolicy(v string) KeepPolicy {
	switch p := KeepPolicy(strings.TrimSpace(v)); p {
	case KeepResume, KeepSuspended:
		return p
	}
	return KeepStop
}

// KeepPolicy is what quitting does with running sessions, by the
// person's setting.
func (m *Manager) KeepPolicy(ctx context.Context) KeepPolicy {
	v, _, err := m.cfg.Store.Setting(ctx, store.SettingKeepSessions)
	if err != nil {
		m.log.Warn("read what quitting does with sessions: stopping them", "err", err)
	}
	return ParseKeepPolicy(v)
}

// Quit ends the engine's sessions as policy says, then closes the
// Manager (Close, within grace from then on; ctx ends both). With
// KeepResume or KeepSuspended each running session is suspended first,
// one by one, within keepTimeout (a save is a burst of disk writes that
// a short close grace would cut); a session that cannot be suspended
// (still starting, paused on a full disk, a backend that cannot save)
// is stopped as before, its work saved.
func (m *Manager) Quit(ctx context.Context, policy KeepPolicy, grace time.Duration) error {
	if policy == KeepResume || policy == KeepSuspended {
		reason := ReasonKept
		if policy == KeepSuspended {
			reason = ReasonKeptSuspended
		}
		kctx, cancel := context.WithTimeout(ctx, keepTimeout)
		kept := m.suspendAllAs(kctx, reason)
		cancel()
		if len(kept) > 0 {
			m.log.Info("kept sessions as Sandbar quits", "sessions", len(kept), "policy", policy)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	return m.Close(cctx)
}

// ResumeKept resumes the sessions an engine promised to resume: those it
// kept as it quit with KeepResume, and those it suspended for the host's
// sleep and that no wake resumed (the engine ended meanwhile). It
// returns the ids it began to resume; each resumes on its own run, and
// one that cannot stays suspended or falls back to interrupted with its
// reason (resumeFailed). The engine calls it once it holds its lock.
func (m *Manager) ResumeKept(ctx context.Context) []string {
	return m.resumeWhere(ctx, func(reason string) bool { return reason == ReasonKept || reason == ReasonSlept })
}

// HostSleeping suspends every running session for the host's sleep
// (app/hostsleep.Start calls it while it delays the sleep). Suspended
// rather than only paused: a paused VM's memory would stay in the host's,
// lost to a hibernation, a battery run flat or a restart, while a
// suspended session is on disk and comes back from any of those; and
// what it costs, about a second of disk writes a session, is spent while
// the person has already turned away.
func (m *Manager) HostSleeping(ctx context.Context) []string {
	ids := m.suspendAllAs(ctx, ReasonSlept)
	if len(ids) > 0 {
		m.log.Info("suspended the sessions for the host's sleep", "sessions", len(ids))
	}
	return ids
}

// HostWoke resumes the sessions HostSleeping suspended, and returns
// their ids.
func (m *Manager) HostWoke(ctx context.Context) []string {
	return m.resumeWhere(ctx, func(reason string) bool { return reason == ReasonSlept })
}

// resumeWhere resumes the suspended sessions whose reason is one of
// ours, per want.
func (m *Manager) resumeWhere(ctx context.Context, want func(reason string) bool) []string {
	ss, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: []store.State{StateSuspended}})
	if err != nil {
		m.log.Warn("list the suspended sessions to resume", "err", err)
		return nil
	}
	var ids []string
	for _, s := range ss {
		if !want(s.Reason) {
			continue
		}
		if _, err := m.resumeSuspended(ctx, s); err != nil {
			m.log.Warn("resume a kept session", "session", s.ID, "err", err)
			continue
		}
		ids = append(ids, s.ID)
	}
	return ids
}

// SuspendedWhy is a suspended session's reason in a few words for a row
// (its whole reason says what brings it back): "" when the person
// suspended it.
func SuspendedWhy(reason string) string {
	switch {
	case reason == ReasonKept || reason == ReasonKeptSuspended:
		return "kept when Sandbar quit"
	case reason == ReasonSlept:
		return "while the computer slept"
	case strings.HasPrefix(reason, autoSuspendedPrefix):
		wait, _, _ := strings.Cut(strings.TrimPrefix(reason, autoSuspendedPrefix), " for your message")
		return "after waiting " + wait + " for you"
	}
	return ""
}
