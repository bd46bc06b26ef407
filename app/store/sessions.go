package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"
)

// Limits are the resources a session's VM gets.
type Limits struct {
	CPUs      int  `json:"cpus"`
	MemoryMiB int  `json:"memory_mib"`
	DiskGiB   int  `json:"disk_gib"`
	Network   bool `json:"network"`
	// NetMode is the session's explicit egress mode ("allowlist" or
	// "open"); "" follows the settings. Network false is off.
	NetMode     string        `json:"net_mode,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`      // whole session; 0: none
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"` // waiting for input; 0: none
}

// Agent is what a session runs in its VM.
type Agent struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Kind    string   `json:"kind"` // app/session's AgentKind: "claude" or "custom"
}

// Owner is the process that runs a session's VM. Other processes ask it,
// through Socket, rather than touching the VM.
type Owner struct {
	PID int `json:"pid,omitempty"`
	// Start is the process's start time, to tell a reused PID apart: in
	// clock ticks since boot on Linux, microseconds since the epoch on
	// macOS, 0 where unknown.
	Start int64  `json:"start,omitempty"`
	Host  string `json:"host,omitempty"`
	// Boot identifies the kernel boot the process ran in (Linux's
	// boot_id, macOS's kern.bootsessionuuid), and PIDNS, on Linux, its
	// pid namespace: together, where PID means this process. A host name
	// is no such identity: a Mac's changes with the network.
	Boot   string `json:"boot,omitempty"`
	PIDNS  string `json:"pidns,omitempty"`
	Socket string `json:"socket,omitempty"`
}

// Session is one agent session: what it runs, on what, and how it went.
// State is one of the State constants (the session manager owns the
// meaning); Activity, while running, is "working", "waiting" or "".
type Session struct {
	ID        string
	ProjectID int64
	// Title is what a person calls the session: made from its prompt at
	// start, or given by a rename; "" for sessions from before titles
	// (session.Title says what to show then).
	Title    string
	Branch   string
	Base     string
	Prompt   string
	Agent    Agent
	Limits   Limits
	State    State
	Reason   string // why it is in State, for a person
	Activity string
	ExitCode *int // the agent's, once it exited
	Error    string
	Owner    Owner
	Timings  map[string]time.Duration // "clone", "boot", "ready", "agent"; never nil when read
	Created  time.Time
	Updated  time.Time
	Started  time.Time
	Ended    time.Time
	// Merged is the last time the session's work was brought into its
	// repository; zero when never.
	Merged Merge
	// Damaged names the columns of the session's row that did not parse
	// ("" when it reads whole): State is then StateDamaged, and Reason
	// says to remove it. Such a row cannot be updated (ErrDamaged).
	Damaged string
}

// Merge records one merge of a session's work into its repository.
type Merge struct {
	// Into is the branch that received it: the repository's current
	// branch ("main"), or the session's own branch when it was created
	// or moved there.
	Into string `json:"into"`
	// Branch: Into is the session's own branch (made by "Create
	// branch"), not a merge into the person's current one.
	Branch bool `json:"branch,omitempty"`
	// Commit is where Into pointed afterwards; Work is the session's
	// commit that was merged (Commit itself, or a parent of it).
	Commit string    `json:"commit"`
	Work   string    `json:"work"`
	Time   time.Time `json:"time"`
}

// IsZero reports whether no merge is recorded.
func (m Merge) IsZero() bool { return m.Commit == "" }

// SessionFilter narrows Sessions; zero fields match every session.
type SessionFilter struct {
	ProjectID int64
	States    []State // any of these
}

const sessionCols = "id, project_id, title, branch, base, prompt, agent, limits, state, activity, reason, exit_code, error, owner, timings, created, updated, started, ended, merged"

// scanSession reads one row of sessionCols. A row whose content does not
// parse (a JSON column that is not JSON, a state Sandbar never writes, a
// number that is text) is no error: it comes back with Damaged saying
// which columns, its State StateDamaged and what could be read kept, so
// that one damaged row neither hides the others nor shows its raw bytes.
// Only a failure to read the row at all is an error.
func scanSession(sc scanner) (Session, error) {
	var raw [20]any
	dest := make([]any, len(raw))
	for i := range raw {
		dest[i] = &raw[i]
	}
	if err := sc.Scan(dest...); err != nil {
		return Session{}, err
	}
	var x Session
	var bad []string
	text := func(name string, v any) string {
		switch v := v.(type) {
		case string:
			if utf8.ValidString(v) {
				return v
			}
		case []byte:
			if utf8.Valid(v) {
				return string(v)
			}
		case nil:
			return ""
		}
		bad = append(bad, name)
		return ""
	}
	integer := func(name string, v any) int64 {
		switch v := v.(type) {
		case int64:
			return v
		case nil:
			return 0
		}
		bad = append(bad, name)
		return 0
	}
	// The id is kept as it is on disk, whatever its bytes: it is how the
	// row is found again (and removed).
	switch v := raw[0].(type) {
	case string:
		x.ID = v
	case []byte:
		x.ID = string(v)
	default:
		x.ID = fmt.Sprint(v)
		bad = append(bad, "id")
	}
	if x.ID == "" || !utf8.ValidString(x.ID) || strings.ContainsFunc(x.ID, unicode.IsControl) {
		bad = append(bad, "id")
	}
	x.ProjectID = integer("project_id", raw[1])
	x.Title = text("title", raw[2])
	x.Branch = text("branch", raw[3])
	x.Base = text("base", raw[4])
	x.Prompt = text("prompt", raw[5])
	agent, limits := text("agent", raw[6]), text("limits", raw[7])
	x.State = State(text("state", raw[8]))
	if !x.State.known() && !slices.Contains(bad, "state") {
		bad = append(bad, "state")
	}
	x.Activity = text("activity", raw[9])
	x.Reason = text("reason", raw[10])
	if raw[11] != nil {
		c := int(integer("exit_code", raw[11]))
		x.ExitCode = &c
	}
	x.Error = text("error", raw[12])
	owner, timings := text("owner", raw[13]), text("timings", raw[14])
	x.Created = fromNanos(integer("created", raw[15]))
	x.Updated = fromNanos(integer("updated", raw[16]))
	x.Started = fromNanos(integer("started", raw[17]))
	x.Ended = fromNanos(integer("ended", raw[18]))
	if merged := text("merged", raw[19]); merged != "" {
		if err := json.Unmarshal([]byte(merged), &x.Merged); err != nil {
			x.Merged = Merge{}
			bad = append(bad, "merged")
		}
	}
	ns := map[string]int64{}
	for _, c := range []struct {
		name, raw string
		into      any
	}{{"agent", agent, &x.Agent}, {"limits", limits, &x.Limits}, {"owner", owner, &x.Owner}, {"timings", timings, &ns}} {
		if slices.Contains(bad, c.name) {
			continue
		}
		if err := json.Unmarshal([]byte(c.raw), c.into); err != nil {
			bad = append(bad, c.name)
		}
	}
	x.Timings = make(map[string]time.Duration, len(ns))
	for k, v := range ns {
		x.Timings[k] = time.Duration(v)
	}
	if len(bad) > 0 {
		x.markDamaged(bad)
	}
	return x, nil
}

// markDamaged makes x, read from a row whose columns bad did not parse,
// what every reader shows of such a row: state damaged, activity none, a
// reason saying what to do, and nothing of the unreadable content.
func (x *Session) markDamaged(bad []string) {
	slices.Sort(bad)
	bad = slices.Compact(bad)
	x.Damaged = strings.Join(bad, ", ")
	x.State, x.Activity = StateDamaged, ""
	x.Reason = DamagedReason(x.ID, x.Damaged)
	if slices.Contains(bad, "title") || slices.Contains(bad, "id") {
		x.Title = ""
	}
}

// DamagedReason is what a session whose record has the unreadable columns
// cols reads as its reason.
func DamagedReason(id, cols string) string {
	return fmt.Sprintf("its record in Sandbar's database is damaged (unreadable: %s): its saved work, if any, is still in Sandbar's repository; remove the record with `sandbar rm %s`", cols, id)
}

// ErrDamaged: the session's record does not parse; the only change it
// takes is its removal.
var ErrDamaged = errors.New("record damaged")

// damaged is the error for a change to a session whose record is damaged.
func damaged(x Session) error {
	return errorf(ErrDamaged, "session %s: its record in Sandbar's database is damaged (unreadable: %s), so it cannot be changed: remove it with `sandbar rm %s`", x.ID, x.Damaged, x.ID)
}

// sessionArgs are x's values in sessionCols order.
func sessionArgs(x Session) ([]any, error) {
	ns := make(map[string]int64, len(x.Timings))
	for k, v := range x.Timings {
		ns[k] = int64(v)
	}
	var js [4]string
	for i, v := range []any{x.Agent, x.Limits, x.Owner, ns} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", x.ID, err)
		}
		js[i] = string(b)
	}
	var exit any
	if x.ExitCode != nil {
		exit = *x.ExitCode
	}
	merged := ""
	if !x.Merged.IsZero() {
		b, err := json.Marshal(x.Merged)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", x.ID, err)
		}
		merged = string(b)
	}
	return []any{x.ID, x.ProjectID, x.Title, x.Branch, x.Base, x.Prompt, js[0], js[1], x.State, x.Activity, x.Reason,
		exit, x.Error, js[2], js[3], nanos(x.Created), nanos(x.Updated), nanos(x.Started), nanos(x.Ended), merged}, nil
}

// updateSessionSQL writes every column but id.
func updateSessionSQL() string {
	cols := strings.Split(sessionCols, ", ")[1:]
	return "UPDATE sessions SET " + strings.Join(cols, " = ?, ") + " = ? WHERE id = ?"
}

func noSession(id string) error {
	return errorf(ErrNotFound, "no session %s: run `sandbar ls` to see the sessions", id)
}

// CreateSession records a new session; Created and Updated are set to now
// where zero. Its ID must be new (else ErrExists) and its ProjectID a
// recorded project (else ErrNotFound).
func (s *Store) CreateSession(ctx context.Context, x Session) error {
	if x.ID == "" {
		return errors.New("create session: it has no id")
	}
	now := time.Now()
	if x.Created.IsZero() {
		x.Created = now
	}
	if x.Updated.IsZero() {
		x.Updated = now
	}
	args, err := sessionArgs(x)
	if err != nil {
		return err
	}
	op := "record session " + x.ID
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO sessions ("+sessionCols+") VALUES (?"+strings.Repeat(", ?", len(args)-1)+")", args...)
		switch {
		case constraint(err, sqlite3.ErrConstraintPrimaryKey), constraint(err, sqlite3.ErrConstraintUnique):
			return errorf(ErrExists, "session %s already exists: start another one", x.ID)
		case constraint(err, sqlite3.ErrConstraintForeignKey):
			return errorf(ErrNotFound, "session %s: no project %d: `sandbar project ls` lists them", x.ID, x.ProjectID)
		case err != nil:
			return s.fail(op, err)
		}
		return nil
	})
}

// Session returns the session with exactly this id, or an error wrapping
// ErrNotFound. A session in the trash is not found (see Trashed).
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	x, err := scanSession(s.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ? AND deleted = 0", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, noSession(id)
	}
	if err != nil {
		return Session{}, s.fail("read session "+id, err)
	}
	return x, nil
}

// minPrefix is the fewest characters of an id FindSession matches as a
// prefix: fewer would match by accident.
const minPrefix = 4

// FindSession returns the session whose id is idOrPrefix or, failing that,
// the one session whose id starts with it (at least 4 characters, compared
// case-sensitively). Several matches give an error wrapping ErrAmbiguous
// that lists them; none, one wrapping ErrNotFound.
func (s *Store) FindSession(ctx context.Context, idOrPrefix string) (Session, error) {
	ref := strings.TrimSpace(idOrPrefix)
	if ref == "" {
		return Session{}, errorf(ErrNotFound, "no session given: name one by its id (run `sandbar ls` to see them)")
	}
	x, err := s.Session(ctx, ref)
	if !errors.Is(err, ErrNotFound) {
		return x, err
	}
	n := utf8.RuneCountInString(ref)
	if n < minPrefix {
		return Session{}, errorf(ErrNotFound, "no session %s: give at least %d characters of its id (run `sandbar ls` to see them)", ref, minPrefix)
	}
	op := "find session " + ref
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM sessions WHERE substr(id, 1, ?) = ? AND deleted = 0 ORDER BY created DESC, id", n, ref)
	if err != nil {
		return Session{}, s.fail(op, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return Session{}, s.fail(op, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Session{}, s.fail(op, err)
	}
	switch len(ids) {
	case 0:
		return Session{}, noSession(ref)
	case 1:
		return s.Session(ctx, ids[0])
	}
	const shown = 8
	list := strings.Join(ids[:min(len(ids), shown)], ", ")
	if len(ids) > shown {
		list += fmt.Sprintf(" and %d more", len(ids)-shown)
	}
	return Session{}, errorf(ErrAmbiguous, "%s matches %d sessions (%s): give more of the id", ref, len(ids), list)
}

// Sessions lists the sessions that match f, newest first; those in the
// trash are left out.
func (s *Store) Sessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	q := "SELECT " + sessionCols + " FROM sessions WHERE deleted = 0"
	var args []any
	if f.ProjectID != 0 {
		q += " AND project_id = ?"
		args = append(args, f.ProjectID)
	}
	if len(f.States) > 0 {
		q += " AND state IN (?" + strings.Repeat(", ?", len(f.States)-1) + ")"
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY created DESC, id DESC", args...)
	if err != nil {
		return nil, s.fail("list sessions", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return nil, s.fail("list sessions", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list sessions", err)
	}
	return out, nil
}

// UpdateSession reads the session, lets fn change it and writes it back
// with Updated set to now, all in one transaction that holds the write
// lock, so no other process's change slips in between. fn's error aborts
// the change and is returned as it is. fn runs with the lock held: keep it
// short, and do not call the store from it. The ID cannot be changed.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error) {
	var out Session
	op := "update session " + id
	err := s.tx(ctx, op, func(tx *sql.Tx) error {
		x, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ? AND deleted = 0", id))
		if errors.Is(err, sql.ErrNoRows) {
			return noSession(id)
		}
		if err != nil {
			return s.fail(op, err)
		}
		if x.Damaged != "" {
			return damaged(x)
		}
		if err := fn(&x); err != nil {
			return err
		}
		x.ID = id
		x.Updated = time.Now()
		args, err := sessionArgs(x)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, updateSessionSQL(), append(args[1:], id)...)
		if constraint(err, sqlite3.ErrConstraintForeignKey) {
			return errorf(ErrNotFound, "session %s: no project %d: `sandbar project ls` lists them", id, x.ProjectID)
		}
		if err != nil {
			return s.fail(op, err)
		}
		// Read it back, so the caller gets exactly what Session will.
		out, err = scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return out, nil
}

// DeleteSession deletes the session with its log lines and events, for
// good, whether or not it is in the trash.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	op := "delete session " + id
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return noSession(id)
		}
		return nil
	})
}
