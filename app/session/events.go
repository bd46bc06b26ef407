package session

import (
	"context"
	"sync"
	"time"

	"sandbar/app/net/netstack"
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
	// EventTurn: a Claude Code agent ended a turn (its stream-json
	// "result") and waits for a message; Turn says how the turn ended.
	// Custom agents have no turns.
	EventTurn EventKind = "turn"
	// EventDropped: the subscriber fell behind and Dropped events after
	// the one before this were not delivered to it (state changes and
	// turn ends are never dropped). Session is the subscription's ("" for all). Re-read
	// from the store what the missed events would have said.
	EventDropped EventKind = "dropped"
	// EventNet: the guest tried a connection the policy denied (Net), at
	// most once a minute for each destination (sandbar net counts them all).
	EventNet EventKind = "net"
	// EventPorts: the session's published ports changed (Ports).
	EventPorts EventKind = "ports"
	// EventTitle: the session was renamed (Title is its new title).
	EventTitle EventKind = "title"
	// EventPurged: the session left the trash for good (emptied by hand
	// or a week after it was deleted). Going into the trash is
	// EventRemoved; coming back out, an EventState.
	EventPurged EventKind = "purged"
	// EventLive: a running tool's output and elapsed time (Live), while
	// it runs; one with Live.Done says it ended. Transient: never stored
	// (see live.go), and dropped for a subscriber that falls behind.
	EventLive EventKind = "live"
)

// Event is what subscribers (tray, windows, CLI) receive.
type Event struct {
	Session  string      `json:"session"`
	Time     time.Time   `json:"time"`
	Kind     EventKind   `json:"kind"`
	State    store.State `json:"state,omitempty"`
	Activity string      `json:"activity,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	ExitCode *int        `json:"exit_code,omitempty"`
	Dropped  int         `json:"dropped,omitempty"` // EventDropped: how many
	Title    string      `json:"title,omitempty"`   // EventTitle

	Log     *store.LogLine     `json:"log,omitempty"`
	Entry   *Entry             `json:"entry,omitempty"`
	Stats   *Stats             `json:"stats,omitempty"`
	Changes *workspace.Changes `json:"changes,omitempty"`
	Turn    *Turn              `json:"turn,omitempty"`
	Net     *store.NetAttempt  `json:"net,omitempty"`
	Ports   []netstack.Port    `json:"ports,omitempty"`
	Live    *LiveOutput        `json:"live,omitempty"`
}

// Turn is how a turn of a Claude Code agent ended.
type Turn struct {
	// Code is 0 when the turn succeeded and 1 when its result was an
	// error (is_error, or a subtype other than success): what `sandbar
	// start --wait` exits with.
	Code    int    `json:"code"`
	Summary string `json:"summary"` // Entry.Summary of the result
}

// turnOf is the end of the turn whose result entry is e.
func turnOf(e Entry) *Turn {
	t := &Turn{Summary: e.Summary()}
	if e.IsError {
		t.Code = 1
		t.Summary = "error: " + lowerFirst(FailureReason(e))
	}
	return t
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

// Bounds of one subscriber's queue. An agent writes lines faster than a
// slow window or a CLI across the engine socket reads them, and it is
// hostile: the queue must not grow with what it writes.
const (
	maxQueueEvents = 8192
	maxQueueBytes  = 16 << 20 // estimated by eventSize
)

// hub fans events out to subscribers. Each subscriber has its own queue,
// so a slow one never blocks the sessions. The queue is bounded: when it
// is full, further log, transcript, stats and changes events are dropped
// and counted in one EventDropped in their place; a state, turn or
// removed event is kept, in place of an older one of the same session and kind
// still queued (it says everything that one said), so what is queued
// beyond the bound is at most three events per session. A turn event is
// kept the same way: `sandbar start --wait` returns on it.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	session string // "" for all
	mu      sync.Mutex
	queue   []Event
	bytes   int // eventSize of the queue's events
	mark    int // index in queue of the EventDropped still counting, or -1
	wake    chan struct{}
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

// subscribe returns a channel of events for session (all sessions when
// ""), closed when ctx is done.
func (h *hub) subscribe(ctx context.Context, session string) <-chan Event {
	s := &subscriber{session: session, mark: -1, wake: make(chan struct{}, 1)}
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
			// One event at a time: a batch taken out of the queue would
			// be held here beyond its bound.
			for ev, ok := s.pop(); ok; ev, ok = s.pop() {
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
		s.push(ev)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// push queues ev, or drops it as the hub's comment says.
func (s *subscriber) push(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := eventSize(ev)
	full := len(s.queue) >= maxQueueEvents || len(s.queue) > 0 && s.bytes+size > maxQueueBytes
	switch {
	case !full:
	case ev.Kind == EventState || ev.Kind == EventTurn || ev.Kind == EventRemoved:
		for i, q := range s.queue {
			if i != s.mark && q.Kind == ev.Kind && q.Session == ev.Session {
				s.remove(i)
				break
			}
		}
	case s.mark >= 0:
		s.queue[s.mark].Dropped++
		return
	default:
		s.mark = len(s.queue)
		s.queue = append(s.queue, Event{Session: s.session, Time: ev.Time, Kind: EventDropped, Dropped: 1})
		return
	}
	s.queue = append(s.queue, ev)
	s.bytes += size
}

// remove takes the event at index i out of the queue.
func (s *subscriber) remove(i int) {
	s.bytes -= eventSize(s.queue[i])
	s.queue = append(s.queue[:i], s.queue[i+1:]...)
	s.queue[len(s.queue):cap(s.queue)][0] = Event{} // let it be collected
	if s.mark > i {
		s.mark--
	}
}

// pop takes the oldest queued event.
func (s *subscriber) pop() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Event{}, false
	}
	ev := s.queue[0]
	s.queue[0] = Event{} // let it be collected
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		s.queue = nil // start again at the front of a new array
	}
	if s.mark == 0 {
		s.mark = -1
	} else {
		s.bytes -= eventSize(ev)
		if s.mark > 0 {
			s.mark--
		}
	}
	return ev, true
}

// eventSize estimates the memory an event holds: what it points to that
// an agent can make large, and a fixed part for the rest.
func eventSize(ev Event) int {
	n := 256
	if ev.Log != nil {
		n += len(ev.Log.Text)
	}
	if ev.Entry != nil {
		n += len(ev.Entry.Text) + len(ev.Entry.Input) + len(ev.Entry.Tool) + len(ev.Entry.ToolID)
	}
	if ev.Changes != nil {
		n += len(ev.Changes.Porcelain) + len(ev.Changes.DiffStat)
		for _, f := range ev.Changes.Files {
			n += 64 + len(f.Path) + len(f.From) + len(f.Status)
		}
	}
	return n
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
