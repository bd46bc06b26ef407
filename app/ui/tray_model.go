package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/assets"
)

// recentProjects is how many projects the Recent Projects submenu lists.
const recentProjects = 8

// trayModel is what the tray shows: everything the menu's labels and
// actions depend on, and nothing else.
type trayModel struct {
	State     assets.TrayState
	Live      int // sessions with a VM
	Attention int // sessions that need the person
	Sessions  []traySession
	Projects  []trayProject
	// Tooltip is the glance in one line: "Sandbar — 2 running, 1
	// waiting for you".
	Tooltip string
}

type traySession struct {
	ID     string
	Label  string // its title, state and time
	Where  string // its project and branch
	Live   bool
	Branch string
	// Merged says where the session's work went ("Merged into main
	// (1a2b3c4)") when it was merged after its last run; "" otherwise.
	Merged string
}

type trayProject struct {
	ID   int64
	Name string
}

func (m trayModel) sameMenu(o trayModel) bool {
	return m.Live == o.Live && m.Attention == o.Attention &&
		slices.Equal(m.Sessions, o.Sessions) && slices.Equal(m.Projects, o.Projects)
}

// buildTrayModel says what the tray shows for these sessions (newest
// first) and projects (most recently used first) at now: every live
// session, and every other one that needs the person.
func buildTrayModel(sessions []store.Session, projects []store.Project, attention map[string]notice, now time.Time) trayModel {
	names := make(map[int64]string, len(projects))
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	var m trayModel
	var glance trayGlance
	for _, s := range sessions {
		live := session.Live(s.State)
		n, needs := attention[s.ID]
		glance.add(s, n)
		// A suspended session is shown too: it is not over, and opening
		// it brings it back.
		if !live && !needs && s.State != session.StateSuspended {
			continue
		}
		if live {
			m.Live++
		}
		if needs {
			m.Attention++
		}
		m.Sessions = append(m.Sessions, traySession{ID: s.ID, Live: live, Label: sessionLabel(s, n, now),
			Where: sessionWhere(s, names[s.ProjectID]), Branch: s.Branch, Merged: trayMerged(s)})
	}
	m.Tooltip = glance.String()
	for _, p := range projects {
		if len(m.Projects) == recentProjects {
			break
		}
		m.Projects = append(m.Projects, trayProject{ID: p.ID, Name: p.Name})
	}
	switch {
	case m.Attention > 0:
		m.State = assets.Attention
	case m.Live > 0:
		m.State = assets.Running
	default:
		m.State = assets.Idle
	}
	return m
}

// sessionLabel is "title · state · 12m".
func sessionLabel(s store.Session, n notice, now time.Time) string {
	state, _ := sessionStatus(s)
	switch {
	case s.State == session.StateRunning && s.Activity == session.ActivityRetrying, s.State == session.StateFailed:
		state = healthWords(s)
	case n == noticeFinished:
		state = "finished"
	}
	from := s.Started
	if from.IsZero() {
		from = s.Created
	}
	to := now
	if !s.Ended.IsZero() {
		to = s.Ended
	}
	return strings.Join([]string{clipTitle(session.Title(s), trayTitle), state, elapsed(to.Sub(from))}, " · ")
}

// trayTitle is the most of a title a tray item shows: menus do not cut
// long items, they widen.
const trayTitle = 48

// sessionWhere is "project · branch", a tray item's secondary text.
func sessionWhere(s store.Session, project string) string {
	if project == "" {
		project = fmt.Sprintf("project %d", s.ProjectID)
	}
	return project + " · " + s.Branch
}

// clipTitle cuts a title to n characters, marking the cut.
func clipTitle(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}

// elapsed is a duration in whole minutes: "<1m", "12m", "2h05m", "3d4h".
func elapsed(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m < 1:
		return "<1m"
	case m < 60:
		return fmt.Sprintf("%dm", m)
	case m < 24*60:
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
	return fmt.Sprintf("%dd%dh", m/(24*60), m%(24*60)/60)
}

// header is the menu's first line: the glance, in words.
func (m trayModel) header() string {
	var parts []string
	switch m.Live {
	case 0:
		parts = append(parts, "No sessions running")
	case 1:
		parts = append(parts, "1 session running")
	default:
		parts = append(parts, fmt.Sprintf("%d sessions running", m.Live))
	}
	if m.Attention > 0 {
		parts = append(parts, fmt.Sprintf("%d need%s you", m.Attention, map[bool]string{true: "s", false: ""}[m.Attention == 1]))
	}
	return strings.Join(parts, " · ")
}

// trayMerged is the tray's line for a session whose work was merged
// after it last ran, "" for any other.
func trayMerged(s store.Session) string {
	m := s.Merged
	if m.IsZero() || session.Live(s.State) || m.Time.Before(s.Ended) {
		return ""
	}
	if m.Branch {
		return fmt.Sprintf("Branch %s created (%.7s)", m.Into, m.Commit)
	}
	return fmt.Sprintf("Merged into %s (%.7s)", m.Into, m.Commit)
}
