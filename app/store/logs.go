package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// its numbers never doubles it. Then the session is trimmed to its newest
// lines: those with a Seq above the highest minus the setting "log_window"
// (DefaultLogWindow when unset).
func (s *Store) AppendLogs(ctx context.Context, sessionID string, lines []LogLine) error {
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines {
		if l.Seq < 0 {
			return fmt.Errorf("store log lines of session %s: line number %d is below 0: leave Seq 0 and the store numbers it", sessionID, l.Seq)
		}
	}
	op := "store log lines of session " + sessionID
	return s.tx(ctx, op, func(tx *sql.Tx) error {
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
		ins, err := tx.PrepareContext(ctx, "INSERT INTO log_lines (session_id, seq, stream, time, text) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
		if err != nil {
			return s.fail(op, err)
		}
		defer ins.Close()
		for i, l := range lines {
			_, err := ins.ExecContext(ctx, sessionID, seqs[i], l.Stream, nanos(l.Time), l.Text)
			if constraint(err, sqlite3.ErrConstraintForeignKey) {
				return noSession(sessionID)
			}
			if err != nil {
				return s.fail(op, err)
			}
		}
		if cut := high - window; cut > 0 {
			if _, err := tx.ExecContext(ctx, "DELETE FROM log_lines WHERE session_id = ? AND seq <= ?", sessionID, cut); err != nil {
				return s.fail(op, err)
			}
		}
		return nil
	})
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
