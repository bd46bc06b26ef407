package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Project is a repository added to Sandbar.
type Project struct {
	ID            int64     `json:"id"`
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	DefaultBranch string    `json:"default_branch"`
	Created       time.Time `json:"created"`
	LastUsed      time.Time `json:"last_used"`
}

// Limits are a session's resources.
type Limits struct {
	CPUs        int           `json:"cpus"`
	MemoryMiB   int           `json:"memory_mib"`
	DiskGiB     int           `json:"disk_gib"`
	Network     bool          `json:"network"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"`
}

// Agent is what a session runs.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Kind    string   `json:"kind"` // "claude" or "custom"
}

// Owner is the process that runs a session's VM.
type Owner struct {
	PID    int    `json:"pid,omitempty"`
	Start  int64  `json:"start,omitempty"` // process start time, to tell reused pids apart
	Host   string `json:"host,omitempty"`
	Socket string `json:"socket,omitempty"`
}

// Session is one agent session.
type Session struct {
	ID        string
	ProjectID int64
	Branch    string
	Base      string
	Prompt    string
	Agent     Agent
	Limits    Limits
	State     string
	Activity  string
	Reason    string
	ExitCode  *int
	Error     string
	Owner     Owner
	Timings   map[string]time.Duration
	Created   time.Time
	Updated   time.Time
	Started   time.Time
	Ended     time.Time
}

// SessionFilter narrows Sessions; zero fields match everything.
type SessionFilter struct {
	ProjectID int64
	States    []string
}

// LogLine is one line of a session's output.
type LogLine struct {
	Seq    int64     `json:"seq"`
	Stream string    `json:"stream"` // stdout, stderr, system, chat, exec
	Time   time.Time `json:"time"`
	Text   string    `json:"text"`
}

// Event is a recorded happening of a session: state changes, timings.
type Event struct {
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail"`
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// ---- projects

const projectCols = "id, name, path, default_branch, created, last_used"

func scanProject(sc interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var created, used int64
	err := sc.Scan(&p.ID, &p.Name, &p.Path, &p.DefaultBranch, &created, &used)
	p.Created, p.LastUsed = fromNanos(created), fromNanos(used)
	return p, err
}

// AddProject records a project; a second one with the same path is
// refused with an error wrapping ErrExists.
func (s *Store) AddProject(ctx context.Context, p Project) (Project, error) {
	now := time.Now()
	if p.Created.IsZero() {
		p.Created = now
	}
	if p.LastUsed.IsZero() {
		p.LastUsed = p.Created
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO projects (name, path, default_branch, created, last_used) VALUES (?, ?, ?, ?, ?)",
			p.Name, p.Path, p.DefaultBranch, nanos(p.Created), nanos(p.LastUsed))
		if isUnique(err) {
			var name string
			tx.QueryRowContext(ctx, "SELECT name FROM projects WHERE path = ?", p.Path).Scan(&name)
			return fmt.Errorf("%s is already the project %q: %w", p.Path, name, ErrExists)
		}
		if err != nil {
			return fmt.Errorf("add project: %w", err)
		}
		p.ID, err = res.LastInsertId()
		return err
	})
	return p, err
}

// Projects lists projects, most recently used first.
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+projectCols+" FROM projects ORDER BY last_used DESC, name")
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Project returns a project by id.
func (s *Store) Project(ctx context.Context, id int64) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("no project %d: `sandbar project ls` lists them: %w", id, ErrNotFound)
	}
	return p, err
}

// ProjectByPath returns the project of a repository path.
func (s *Store) ProjectByPath(ctx context.Context, path string) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE path = ?", path))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("no project at %s: add it with `sandbar project add`: %w", path, ErrNotFound)
	}
	return p, err
}

// TouchProject records that a project was used at t.
func (s *Store) TouchProject(ctx context.Context, id int64, t time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE projects SET last_used = ? WHERE id = ?", nanos(t), id)
	return err
}

// RemoveProject forgets a project; it refuses while sessions of it exist.
func (s *Store) RemoveProject(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE project_id = ?", id).Scan(&n)
		if n > 0 {
			return fmt.Errorf("the project has %d sessions: remove them first (`sandbar ls`, `sandbar rm`): %w", n, ErrInUse)
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM projects WHERE id = ?", id)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("no project %d: %w", id, ErrNotFound)
		}
		return nil
	})
}

// ---- sessions

const sessionCols = "id, project_id, branch, base, prompt, agent, limits, state, activity, reason, exit_code, error, owner, timings, created, updated, started, ended"

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var x Session
	var agent, limits, owner, timings string
	var exit sql.NullInt64
	var created, updated, started, ended int64
	err := sc.Scan(&x.ID, &x.ProjectID, &x.Branch, &x.Base, &x.Prompt, &agent, &limits, &x.State, &x.Activity, &x.Reason,
		&exit, &x.Error, &owner, &timings, &created, &updated, &started, &ended)
	if err != nil {
		return x, err
	}
	json.Unmarshal([]byte(agent), &x.Agent)
	json.Unmarshal([]byte(limits), &x.Limits)
	json.Unmarshal([]byte(owner), &x.Owner)
	ms := map[string]int64{}
	json.Unmarshal([]byte(timings), &ms)
	x.Timings = map[string]time.Duration{}
	for k, v := range ms {
		x.Timings[k] = time.Duration(v)
	}
	if exit.Valid {
		c := int(exit.Int64)
		x.ExitCode = &c
	}
	x.Created, x.Updated, x.Started, x.Ended = fromNanos(created), fromNanos(updated), fromNanos(started), fromNanos(ended)
	return x, nil
}

func sessionArgs(x Session) []any {
	agent, _ := json.Marshal(x.Agent)
	limits, _ := json.Marshal(x.Limits)
	owner, _ := json.Marshal(x.Owner)
	ms := map[string]int64{}
	for k, v := range x.Timings {
		ms[k] = int64(v)
	}
	timings, _ := json.Marshal(ms)
	var exit any
	if x.ExitCode != nil {
		exit = *x.ExitCode
	}
	return []any{x.ID, x.ProjectID, x.Branch, x.Base, x.Prompt, string(agent), string(limits), x.State, x.Activity, x.Reason,
		exit, x.Error, string(owner), string(timings), nanos(x.Created), nanos(x.Updated), nanos(x.Started), nanos(x.Ended)}
}

// CreateSession records a new session.
func (s *Store) CreateSession(ctx context.Context, x Session) error {
	now := time.Now()
	if x.Created.IsZero() {
		x.Created = now
	}
	if x.Updated.IsZero() {
		x.Updated = now
	}
	_, err := s.db.ExecContext(ctx, "INSERT INTO sessions ("+sessionCols+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", sessionArgs(x)...)
	if isUnique(err) {
		return fmt.Errorf("session %s: %w", x.ID, ErrExists)
	}
	if err != nil && strings.Contains(err.Error(), "FOREIGN KEY") {
		return fmt.Errorf("session %s: no project %d: %w", x.ID, x.ProjectID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record session: %w", err)
	}
	return nil
}

func notFound(id string) error {
	return fmt.Errorf("no session %s: `sandbar ls` lists them: %w", id, ErrNotFound)
}

// Session returns a session by its full id.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	x, err := scanSession(s.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return x, notFound(id)
	}
	return x, err
}

// FindSession returns a session by id or by a unique prefix of at least
// four characters.
func (s *Store) FindSession(ctx context.Context, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	if x, err := s.Session(ctx, ref); err == nil || !errors.Is(err, ErrNotFound) {
		return x, err
	}
	if len(ref) < 4 || strings.ContainsAny(ref, "%_\\") {
		return Session{}, notFound(ref)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id LIKE ? ORDER BY created DESC LIMIT 6", ref+"%")
	if err != nil {
		return Session{}, err
	}
	defer rows.Close()
	var found []Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return Session{}, err
		}
		found = append(found, x)
	}
	switch len(found) {
	case 0:
		return Session{}, notFound(ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = x.ID
	}
	return Session{}, fmt.Errorf("%q matches several sessions (%s): give more of the id: %w", ref, strings.Join(ids, ", "), ErrAmbiguous)
}

// Sessions lists sessions, newest first.
func (s *Store) Sessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	q := "SELECT " + sessionCols + " FROM sessions WHERE 1=1"
	var args []any
	if f.ProjectID != 0 {
		q += " AND project_id = ?"
		args = append(args, f.ProjectID)
	}
	if len(f.States) > 0 {
		q += " AND state IN (" + strings.TrimSuffix(strings.Repeat("?,", len(f.States)), ",") + ")"
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY created DESC, id", args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// UpdateSession reads the session, lets fn change it and writes it back,
// in one transaction.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	var out Session
	err := s.tx(ctx, func(tx *sql.Tx) error {
		x, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		if err := fn(&x); err != nil {
			return err
		}
		x.ID = id
		x.Updated = time.Now()
		args := sessionArgs(x)
		sets := strings.Split(sessionCols, ", ")
		var q strings.Builder
		q.WriteString("UPDATE sessions SET ")
		for i, c := range sets[1:] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(c + " = ?")
		}
		q.WriteString(" WHERE id = ?")
		if _, err := tx.ExecContext(ctx, q.String(), append(args[1:], id)...); err != nil {
			return fmt.Errorf("update session %s: %w", id, err)
		}
		out = x
		return nil
	})
	return out, err
}

// DeleteSession deletes a session with its log lines and events.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound(id)
	}
	return nil
}

// ---- logs and events

// AppendLogs stores lines of a session in one transaction, numbering those
// with Seq 0 after the last stored one, then trims the session to the
// newest log_window lines.
func (s *Store) AppendLogs(ctx context.Context, sessionID string, lines []LogLine) error {
	if len(lines) == 0 {
		return nil
	}
	window := s.logWindow(ctx)
	return s.tx(ctx, func(tx *sql.Tx) error {
		var last int64
		tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM log_lines WHERE session_id = ?", sessionID).Scan(&last)
		stmt, err := tx.PrepareContext(ctx, "INSERT INTO log_lines (session_id, seq, stream, time, text) VALUES (?, ?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer stmt.Close()
		max := last
		for _, l := range lines {
			seq := l.Seq
			if seq == 0 {
				seq = max + 1
			}
			if seq > max {
				max = seq
			}
			if _, err := stmt.ExecContext(ctx, sessionID, seq, l.Stream, nanos(l.Time), l.Text); err != nil {
				if strings.Contains(err.Error(), "FOREIGN KEY") {
					return notFound(sessionID)
				}
				return fmt.Errorf("store log lines: %w", err)
			}
		}
		if max-int64(window) > 0 {
			if _, err := tx.ExecContext(ctx, "DELETE FROM log_lines WHERE session_id = ? AND seq <= ?", sessionID, max-int64(window)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) logWindow(ctx context.Context) int {
	if v, ok, _ := s.Setting(ctx, "log_window"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return DefaultLogWindow
}

func scanLines(rows *sql.Rows) ([]LogLine, error) {
	defer rows.Close()
	var out []LogLine
	for rows.Next() {
		var l LogLine
		var t int64
		if err := rows.Scan(&l.Seq, &l.Stream, &t, &l.Text); err != nil {
			return nil, err
		}
		l.Time = fromNanos(t)
		out = append(out, l)
	}
	return out, rows.Err()
}

// Logs returns up to limit lines after afterSeq, oldest first.
func (s *Store) Logs(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]LogLine, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, "SELECT seq, stream, time, text FROM log_lines WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?", sessionID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return scanLines(rows)
}

// LastLogs returns the newest n lines, oldest first.
func (s *Store) LastLogs(ctx context.Context, sessionID string, n int) ([]LogLine, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT seq, stream, time, text FROM log_lines WHERE session_id = ? ORDER BY seq DESC LIMIT ?", sessionID, n)
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	out, err := scanLines(rows)
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, err
}

// AppendEvent records an event of a session.
func (s *Store) AppendEvent(ctx context.Context, sessionID string, e Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO events (session_id, seq, time, kind, detail)
			VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?), ?, ?, ?)`,
			sessionID, sessionID, nanos(e.Time), e.Kind, e.Detail)
		if err != nil && strings.Contains(err.Error(), "FOREIGN KEY") {
			return notFound(sessionID)
		}
		return err
	})
}

// Events returns a session's events, oldest first.
func (s *Store) Events(ctx context.Context, sessionID string) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT seq, time, kind, detail FROM events WHERE session_id = ? ORDER BY seq", sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var t int64
		if err := rows.Scan(&e.Seq, &t, &e.Kind, &e.Detail); err != nil {
			return nil, err
		}
		e.Time = fromNanos(t)
		out = append(out, e)
	}
	return out, rows.Err()
}

// ---- secret names and settings

// AddSecretName records a secret's name (never its value).
func (s *Store) AddSecretName(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, "INSERT OR IGNORE INTO secret_names (name) VALUES (?)", name)
	return err
}

// SecretNames lists the secret names, sorted.
func (s *Store) SecretNames(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM secret_names ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// RemoveSecretName forgets a secret's name.
func (s *Store) RemoveSecretName(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM secret_names WHERE name = ?", name)
	return err
}

// Setting returns a setting and whether it is set.
func (s *Store) Setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return v, err == nil, err
}

// SetSetting sets a setting.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, value)
	return err
}

// Settings returns every setting.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT key, value FROM settings")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}
