package session

import (
	"context"
	"sync"
	"time"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// EventKind says what changed.
type EventKind string

// Event kinds.
const (
	EventState      EventKind = "state"      // State, Activity, Reason changed
	EventLog        EventKind = "log"        // a line of agent output (redacted)
	EventTranscript EventKind = "transcript" // a transcript entry (Claude Code agents)
	EventStats      EventKind = "stats"      // guest and host resource use
	EventChanges    EventKind = "changes"    // the workspace changed
	EventRemoved    EventKind = "removed"    // the session was deleted
)

// Event is what subscribers (tray, windows, CLI) receive.
type Event struct {
	Session  string    `json:"session"`
	Time     time.Time `json:"time"`
	Kind     EventKind `json:"kind"`
	State    string    `json:"state,omitempty"`
	Activity string    `json:"activity,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`

	Log     *store.LogLine     `json:"log,omitempty"`
	Entry   *Entry             `json:"entry,omitempty"`
	Stats   *Stats             `json:"stats,omitempty"`
	Changes *workspace.Changes `json:"changes,omitempty"`
}

// Stats is a session's resource use: the guest's view and the host's
// cost of its VM.
type Stats struct {
	CPU        float64 `json:"cpu"` // percent of the session's vCPUs
	MemUsed    uint64  `json:"mem_used"`
	MemTotal   uint64  `json:"mem_total"`
	DiskUsed   uint64  `json:"disk_used"` // scratch disk
	DiskTotal  uint64  `json:"disk_total"`
	WSUsed     uint64  `json:"ws_used"` // the workspace's file system
	WSTotal    uint64  `json:"ws_total"`
	Procs      int     `json:"procs"`
	HostRSS    uint64  `json:"host_rss"`
	HostCPUSec float64 `json:"host_cpu_sec"`
}

// hub fans events out to subscribers. Each subscriber has its own
// unbounded queue, so a slow one never blocks the sessions and never
// loses an event; it only costs memory until it catches up.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	session string // "" for all
	mu      sync.Mutex
	queue   []Event
	wake    chan struct{}
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

// subscribe returns a channel of events for session (all sessions when
// ""), closed when ctx is done.
func (h *hub) subscribe(ctx context.Context, session string) <-chan Event {
	s := &subscriber{session: session, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	out := make(chan Event, 64)
	go func() {
		defer close(out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
		}()
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, ev := range batch {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (h *hub) publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.session != "" && s.session != ev.Session {
			continue
		}
		s.mu.Lock()
		s.queue = append(s.queue, ev)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Reasons of the stops a person asked for, as a stopped session's Reason
// says them: nobody needs to be told that what they just did happened.
const (
	ReasonStoppedByUser = "stopped by the user" // Stop
	ReasonRemoved       = "removed"             // Remove of a live session
	ReasonQuit          = "Sandbar quit"        // the engine closing
)

// StoppedByPerson reports whether reason is that of a stop the person
// asked for (Stop, Remove, quitting Sandbar).
func StoppedByPerson(reason string) bool {
	switch reason {
	case ReasonStoppedByUser, ReasonRemoved, ReasonQuit:
		return true
	}
	return false
}
