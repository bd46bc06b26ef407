package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
)

// LogLine is one line of a session's output or of Sandbar's own about it.
type LogLine struct {
	Seq    int64     `json:"seq"`    // 1, 2, ... per session
	Stream string    `json:"stream"` // "stdout", "stderr", "system", "chat", "exec"
	Time   time.Time `json:"time"`
	Text   string    `json:"text"`
}

// Event is something that happened to a session: a state change, a timing,
// an error.
type Event struct {
	Seq    int64     `json:"seq"` // 1, 2, ... per session, given by the store
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail"`
}

// DefaultLogWindow is how many log lines of each session the database
// keeps, the newest, unless the setting "log_window" says otherwise.
const DefaultLogWindow = 100000

// AppendLogs stores lines of the session in one transaction. A line whose
// Seq is 0 is numbered after the highest stored or given so far (lines is
// not changed: a caller that needs the numbers gives them); a line whose
// Seq is already stored is left as stored, so retrying a batch that gives
// its numbers never doubles it. The session keeps its newest lines only:
// those with a Seq above the highest minus the setting "log_window"
// (DefaultLogWindow when unset), and no more text than the byte cap
// (config.StoredLogMax). Room for the batch is made first, the oldest
// lines going in batches of a quarter of the cap, so the session's text
// never passes the cap on disk; a batch larger than the cap keeps its
// newest lines. FirstLogSeq above 1 says older lines were dropped.
func (s *Store) AppendLogs(ctx context.Context, sessionID string, lines []LogLine) error {
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines {
		if l.Seq < 0 {
			return fmt.Errorf("store log lines of session %s: line number %d is below 0: leave Seq 0 and the store numbers it", sessionID, l.Seq)
		}
	}
	// One append at a time in this process, so the byte count it keeps
	// per session follows the commits in order.
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	op := "store log lines of session " + sessionID
	var used int64
	err := s.tx(ctx, op, func(tx *sql.Tx) error {
		var exists, last sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT (SELECT 1 FROM sessions WHERE id = ?1), (SELECT max(seq) FROM log_lines WHERE session_id = ?1)", sessionID).Scan(&exists, &last)
		if err != nil {
			return s.fail(op, err)
		}
		if !exists.Valid {
			return noSession(sessionID)
		}
		window, err := logWindow(ctx, tx)
		if err != nil {
			return s.fail(op, err)
		}
		high := last.Int64
		seqs := make([]int64, len(lines))
		for i, l := range lines {
			seqs[i] = l.Seq
			if seqs[i] == 0 {
				seqs[i] = high + 1
			}
			high = max(high, seqs[i])
		}
		// The batch's newest lines that fit the cap.
		first, size := len(lines), int64(0)
		for first > 0 && size+int64(len(lines[first-1].Text)) <= s.logs.max {
			first--
			size += int64(len(lines[first].Text))
		}
		used, err = s.logs.usedIn(ctx, tx, sessionID)
		if err != nil {
			return s.fail(op, err)
		}
		if used+size > s.logs.max {
			freed, err := trimLogBytes(ctx, tx, sessionID, used+size-s.logs.max*3/4)
			if err != nil {
				return s.fail(op, err)
			}
			used -= freed
		}
		ins, err := tx.PrepareContext(ctx, "INSERT INTO log_lines (session_id, seq, stream, time, text) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
		if err != nil {
			return s.fail(op, err)
		}
		defer ins.Close()
		for i, l := range lines[first:] {
			res, err := ins.ExecContext(ctx, sessionID, seqs[first+i], l.Stream, nanos(l.Time), l.Text)
			if constraint(err, sqlite3.ErrConstraintForeignKey) {
				return noSession(sessionID)
			}
			if err != nil {
				return s.fail(op, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				used += int64(len(l.Text))
			}
		}
		if cut := high - window; cut > 0 {
			var gone int64
			if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(octet_length(text)), 0) FROM log_lines WHERE session_id = ? AND seq <= ?", sessionID, cut).Scan(&gone); err != nil {
				return s.fail(op, err)
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM log_lines WHERE session_id = ? AND seq <= ?", sessionID, cut); err != nil {
				return s.fail(op, err)
			}
			used -= gone
		}
		return nil
	})
	if err != nil {
		delete(s.logs.used, sessionID) // counted again next time
		return err
	}
	s.logs.used[sessionID] = used
	return nil
}

// logBytes keeps, per session, how many bytes of text its stored log
// holds, so an append need not sum them each time. The count is this
// process's: the engine alone appends a session's lines; one another
// process deleted (the trash) only makes it trim early, once.
type logBytes struct {
	mu   sync.Mutex
	max  int64
	used map[string]int64
}

func newLogBytes(max int64) *logBytes { return &logBytes{max: max, used: map[string]int64{}} }

// usedIn is the session's stored text in bytes: the count kept, else
// summed in tx. octet_length reads a text's length without its content.
func (b *logBytes) usedIn(ctx context.Context, tx *sql.Tx, sessionID string) (int64, error) {
	if n, ok := b.used[sessionID]; ok {
		return n, nil
	}
	var n int64
	err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(octet_length(text)), 0) FROM log_lines WHERE session_id = ?", sessionID).Scan(&n)
	return n, err
}

// trimLogBytes deletes the session's oldest lines, at least need bytes of
// text of them, and says how many bytes it freed.
func trimLogBytes(ctx context.Context, tx *sql.Tx, sessionID string, need int64) (int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT seq, octet_length(text) FROM log_lines WHERE session_id = ? ORDER BY seq", sessionID)
	if err != nil {
		return 0, err
	}
	var cut, freed int64
	for freed < need && rows.Next() {
		var n int64
		if err := rows.Scan(&cut, &n); err != nil {
			rows.Close()
			return 0, err
		}
		freed += n
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	if cut == 0 {
		return 0, nil
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM log_lines WHERE session_id = ? AND seq <= ?", sessionID, cut)
	return freed, err
}

// FirstLogSeq is the number of the session's oldest stored line (0 when
// it has none). Above 1, older lines were dropped: the window and
// `sandbar logs` say "earlier output trimmed".
func (s *Store) FirstLogSeq(ctx context.Context, sessionID string) (int64, error) {
	var first sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT min(seq) FROM log_lines WHERE session_id = ?", sessionID).Scan(&first)
	if err != nil {
		return 0, s.fail("read the log of session "+sessionID, err)
	}
	return first.Int64, nil
}

// logWindow reads the setting "log_window" in tx.
func logWindow(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v string
	err := tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", SettingLogWindow).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return DefaultLogWindow, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := parseLogWindow(v)
	if err != nil {
		return DefaultLogWindow, nil // SetSetting refuses a bad value; one written by hand is ignored
	}
	return n, nil
}

func parseLogWindow(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("setting %s: %q is not a number of lines: give a whole number above 0 (default %d)", SettingLogWindow, v, DefaultLogWindow)
	}
	return n, nil
}

func (s *Store) scanLines(op string, rows *sql.Rows) ([]LogLine, error) {
	defer rows.Close()
	var out []LogLine
	for rows.Next() {
		var l LogLine
		var t int64
		if err := rows.Scan(&l.Seq, &l.Stream, &t, &l.Text); err != nil {
			return nil, s.fail(op, err)
		}
		l.Time = fromNanos(t)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// Logs returns the session's lines with a Seq above afterSeq, oldest
// first, at most limit of them (no bound when limit <= 0). A session
// unknown or deleted has no lines.
func (s *Store) Logs(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]LogLine, error) {
	op := "read the log of session " + sessionID
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, "SELECT seq, stream, time, text FROM log_lines WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?", sessionID, afterSeq, limit)
	if err != nil {
		return nil, s.fail(op, err)
	}
	return s.scanLines(op, rows)
}

// LastLogs returns the session's newest n lines, oldest first.
func (s *Store) LastLogs(ctx context.Context, sessionID string, n int) ([]LogLine, error) {
	if n <= 0 {
		return nil, nil
	}
	op := "read the log of session " + sessionID
	rows, err := s.db.QueryContext(ctx, "SELECT seq, stream, time, text FROM log_lines WHERE session_id = ? ORDER BY seq DESC LIMIT ?", sessionID, n)
	if err != nil {
		return nil, s.fail(op, err)
	}
	out, err := s.scanLines(op, rows)
	slices.Reverse(out)
	return out, err
}

// AppendEvent records an event of the session, numbered after its last;
// e.Seq is ignored and e.Time defaults to now.
func (s *Store) AppendEvent(ctx context.Context, sessionID string, e Event) error {
	if e.Kind == "" {
		return fmt.Errorf("record an event of session %s: it has no kind", sessionID)
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	op := "record an event of session " + sessionID
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO events (session_id, seq, time, kind, detail)
			VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE session_id = ?1), ?2, ?3, ?4)`,
			sessionID, nanos(e.Time), e.Kind, e.Detail)
		if constraint(err, sqlite3.ErrConstraintForeignKey) {
			return noSession(sessionID)
		}
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// Events returns the session's events, oldest first.
func (s *Store) Events(ctx context.Context, sessionID string) ([]Event, error) {
	op := "read the events of session " + sessionID
	rows, err := s.db.QueryContext(ctx, "SELECT seq, time, kind, detail FROM events WHERE session_id = ? ORDER BY seq", sessionID)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var t int64
		if err := rows.Scan(&e.Seq, &t, &e.Kind, &e.Detail); err != nil {
			return nil, s.fail(op, err)
		}
		e.Time = fromNanos(t)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}
