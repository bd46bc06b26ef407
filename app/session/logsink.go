package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/vm/caplog"
)

// logSink records one session's lines and transcript entries: each goes
// to subscribers at once, to the agent log and transcript files, and to
// the store in batches (every 200 ms, 500 lines or 1 MiB) that a flusher
// goroutine writes. It takes its lines already redacted.
//
// Lines taken before open or after Close still reach subscribers and the
// store's batch (flush writes it); only the files miss them.
type logSink struct {
	id  string
	st  *store.Store
	hub *hub
	log *slog.Logger
	// storeMu is the Manager's: one batch written at a time per process,
	// of any session, keeps SQLite's lock contention low. It says nothing
	// about the order of one session's batches: flushMu does.
	storeMu sync.Locker
	// flushMu is held by a flush from taking the pending batch until the
	// store has it, so two flushes at once (the flusher's tick and
	// finish's) write their batches in the order their lines were
	// logged: a reader following the store by Logs(afterSeq) would skip
	// an earlier batch written after a later one for good.
	flushMu sync.Mutex

	mu      sync.Mutex
	seq     int64
	logW    *caplog.File
	trF     *caplog.File
	pending []store.LogLine
	// pendingBytes is the text of pending; dropped counts the lines
	// dropped from it since the last flush said so (maxPendingLog).
	pendingBytes int
	dropped      int
	// heldFull: the last flush found the database's disk full and kept
	// its batch (guarded by flushMu).
	heldFull bool

	wake chan struct{}
	// arm tells the flusher a line waits, so it flushes in flushEvery:
	// an idle session's flusher sleeps rather than ticking five times a
	// second.
	arm  chan struct{}
	stop chan struct{}
	done chan struct{} // nil until open starts the flusher
}

func newLogSink(id string, st *store.Store, h *hub, log *slog.Logger, storeMu sync.Locker) *logSink {
	return &logSink{id: id, st: st, hub: h, log: log, storeMu: storeMu, wake: make(chan struct{}, 1), arm: make(chan struct{}, 1), stop: make(chan struct{})}
}

// open opens the session's agent log and transcript for appending, each
// capped (config.AgentLogMax, config.TranscriptMax), finds the log's next
// sequence number, and starts the flusher. Close undoes it.
func (l *logSink) open(ctx context.Context, dir config.SessionDir) error {
	f, err := caplog.Open(dir.AgentLog(), config.AgentLogMax, []byte(agentLogMarker), 64<<10)
	if err != nil {
		return fmt.Errorf("open the agent log: %w", err)
	}
	t, err := caplog.Open(dir.Transcript(), config.TranscriptMax, []byte(transcriptMarker), 0)
	if err != nil {
		f.Close()
		return fmt.Errorf("open the transcript: %w", err)
	}
	last, _ := l.st.LastLogs(ctx, l.id, 1)
	l.mu.Lock()
	l.logW, l.trF = f, t
	if len(last) > 0 && last[0].Seq > l.seq {
		l.seq = last[0].Seq
	}
	l.mu.Unlock()
	l.done = make(chan struct{})
	go l.flusher()
	return nil
}

// Close stops the flusher, writes what is pending, and closes the files.
func (l *logSink) Close() error {
	if l.done != nil {
		close(l.stop)
		<-l.done
	}
	l.flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.pending); n > 0 {
		// The disk stayed full to the end: the lines are in agent.log
		// (when it had room), not in the database; the count is said.
		l.log.Warn("log lines not stored: the disk holding the database stayed full until the session ended; agent.log in its folder holds them", "session", l.id, "lines", n+l.dropped)
		l.pending, l.pendingBytes, l.dropped = nil, 0, 0
	}
	if l.logW == nil {
		return nil
	}
	err := errors.Join(l.logW.Close(), l.trF.Close())
	l.logW, l.trF = nil, nil
	if err != nil {
		return fmt.Errorf("close the session's log: %w", err)
	}
	return nil
}

// line records one (already redacted) line of a stream: "stdout",
// "stderr", "system", "chat" or "exec".
func (l *logSink) line(stream, text string) {
	l.mu.Lock()
	l.seq++
	ln := store.LogLine{Seq: l.seq, Stream: stream, Time: time.Now(), Text: boundLogText(text)}
	if l.logW != nil {
		fmt.Fprintf(l.logW, "%s %-6s %s\n", ln.Time.UTC().Format("2006-01-02T15:04:05.000Z"), stream, ln.Text)
	}
	l.pending = append(l.pending, ln)
	l.pendingBytes += len(ln.Text)
	for l.pendingBytes > maxPendingLog && len(l.pending) > 1 {
		l.pendingBytes -= len(l.pending[0].Text)
		l.pending[0] = store.LogLine{}
		l.pending = l.pending[1:]
		l.dropped++
	}
	n, size := len(l.pending), l.pendingBytes
	l.mu.Unlock()
	wake := l.arm
	if n >= 500 || size >= flushPendingLog {
		wake = l.wake
	}
	select {
	case wake <- struct{}{}:
	default:
	}
	l.hub.publish(Event{Session: l.id, Time: ln.Time, Kind: EventLog, Log: &ln})
}

// entry records one transcript entry, its text and input bounded.
func (l *logSink) entry(e Entry) {
	e = boundEntry(e)
	l.mu.Lock()
	if l.trF != nil {
		b, _ := json.Marshal(e)
		l.trF.Write(append(b, '\n'))
	}
	l.mu.Unlock()
	l.hub.publish(Event{Session: l.id, Time: e.Time, Kind: EventTranscript, Entry: &e})
}

// flushEvery is how long a logged line waits for the store at most,
// unless a flood wakes the flusher sooner.
const flushEvery = 200 * time.Millisecond

// flusher writes pending lines to the store flushEvery after the first
// one since the last write, or at once when line wakes it. Lines kept
// back (a full disk) are tried again flushEvery later.
func (l *logSink) flusher() {
	defer close(l.done)
	t := time.NewTimer(flushEvery)
	defer t.Stop()
	armed := true
	for {
		select {
		case <-l.wake:
			l.flush()
		case <-l.arm:
			if !armed {
				t.Reset(flushEvery)
				armed = true
			}
		case <-l.stop:
			return
		case <-t.C:
			armed = false
			l.flush()
			l.mu.Lock()
			left := len(l.pending) > 0
			l.mu.Unlock()
			if left {
				t.Reset(flushEvery)
				armed = true
			}
		}
	}
}

// flush writes the pending lines to the store now, and the log file's
// buffer to disk.
func (l *logSink) flush() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	batch, dropped := l.pending, l.dropped
	l.pending, l.pendingBytes, l.dropped = nil, 0, 0
	if l.logW != nil {
		l.logW.Flush()
	}
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("log lines not stored: the store fell behind the agent's output", "lines", dropped)
	}
	if len(batch) == 0 {
		return
	}
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	err := l.st.AppendLogs(context.Background(), l.id, batch)
	switch {
	case errors.Is(err, store.ErrDiskFull):
		// Kept for the next flush, once there is room, before the lines
		// logged since; past maxPendingLog the oldest are dropped and
		// counted, as for a flood.
		l.mu.Lock()
		size := l.pendingBytes
		for _, ln := range batch {
			size += len(ln.Text)
		}
		l.pending, l.pendingBytes = append(batch, l.pending...), size
		for l.pendingBytes > maxPendingLog && len(l.pending) > 1 {
			l.pendingBytes -= len(l.pending[0].Text)
			l.pending[0] = store.LogLine{}
			l.pending = l.pending[1:]
			l.dropped++
		}
		l.mu.Unlock()
		if !l.heldFull {
			l.heldFull = true
			l.log.Warn("log lines held: the disk holding the database is full; they are stored once there is room", "lines", len(batch))
		}
	case err != nil:
		l.log.Warn("store log lines", "err", err, "lines", len(batch))
	default:
		l.heldFull = false
	}
}
