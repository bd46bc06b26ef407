package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Host is a remote machine sessions can run on (`sandbar hosts add`):
// a libvirt host reached over SSH.
type Host struct {
	// Name is what the person calls it (start --on NAME).
	Name string
	// URL is ssh://user@host[:port].
	URL string
	// Dir is where Sandbar keeps its files on the host ("" for the
	// default, relative to the SSH user's home).
	Dir   string
	Added time.Time
	// Checked is when the host was last checked, and Status what that
	// check found, in words ("" when never checked).
	Checked time.Time
	Status  string
}

// validHostName: a name given on a command line and shown in lists.
func validHostName(name string) error {
	if name == "" || len(name) > 40 || strings.ToLower(name) == "local" || strings.ToLower(name) == "auto" {
		return fmt.Errorf("host name %q is not allowed: use 1–40 letters, digits, '-' or '_' (not \"local\" or \"auto\")", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("host name %q is not allowed: use 1–40 letters, digits, '-' or '_'", name)
		}
	}
	return nil
}

// AddHost records a host; its name must be new (else ErrExists).
func (s *Store) AddHost(ctx context.Context, h Host) error {
	if err := validHostName(h.Name); err != nil {
		return err
	}
	if h.Added.IsZero() {
		h.Added = time.Now()
	}
	op := "record host " + h.Name
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO hosts (name, url, dir, added, checked, status) VALUES (?, ?, ?, ?, ?, ?)",
			h.Name, h.URL, h.Dir, h.Added.UnixNano(), unixNano(h.Checked), h.Status)
		switch {
		case constraint(err, sqlite3.ErrConstraintPrimaryKey), constraint(err, sqlite3.ErrConstraintUnique):
			return errorf(ErrExists, "a host named %s is already added: pick another name, or `sandbar hosts rm %s` first", h.Name, h.Name)
		case err != nil:
			return s.fail(op, err)
		}
		return nil
	})
}

// Hosts lists the hosts by name.
func (s *Store) Hosts(ctx context.Context) ([]Host, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, url, dir, added, checked, status FROM hosts ORDER BY name")
	if err != nil {
		return nil, s.fail("list hosts", err)
	}
	defer rows.Close()
	var out []Host
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			return nil, s.fail("list hosts", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list hosts", err)
	}
	return out, nil
}

// Host returns the host of that name, or an error wrapping ErrNotFound.
func (s *Store) Host(ctx context.Context, name string) (Host, error) {
	h, err := scanHost(s.db.QueryRowContext(ctx, "SELECT name, url, dir, added, checked, status FROM hosts WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return Host{}, errorf(ErrNotFound, "no host named %s: `sandbar hosts` lists them, `sandbar hosts add` adds one", name)
	}
	if err != nil {
		return Host{}, s.fail("read host "+name, err)
	}
	return h, nil
}

// SetHostStatus records what a check of the host found.
func (s *Store) SetHostStatus(ctx context.Context, name, status string, at time.Time) error {
	op := "record the check of host " + name
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE hosts SET status = ?, checked = ? WHERE name = ?", status, at.UnixNano(), name)
		if err != nil {
			return s.fail(op, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errorf(ErrNotFound, "no host named %s: `sandbar hosts` lists them", name)
		}
		return nil
	})
}

// RemoveHost forgets a host. It is refused (ErrInUse, naming them) while
// sessions that have, or are getting, a VM there are live.
func (s *Store) RemoveHost(ctx context.Context, name string) error {
	op := "remove host " + name
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		live, err := liveOn(ctx, tx, name)
		if err != nil {
			return s.fail(op, err)
		}
		if len(live) > 0 {
			return errorf(ErrInUse, "host %s has %d live session(s): %s; stop them first (`sandbar stop ID`)", name, len(live), strings.Join(live, ", "))
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM hosts WHERE name = ?", name)
		if err != nil {
			return s.fail(op, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errorf(ErrNotFound, "no host named %s: `sandbar hosts` lists them", name)
		}
		return nil
	})
}

// SetSessionHost records that a session runs on a host (never for this
// machine).
func (s *Store) SetSessionHost(ctx context.Context, sessionID, host string) error {
	op := "record where session " + sessionID + " runs"
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO session_hosts (session_id, host) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET host = excluded.host", sessionID, host)
		if constraint(err, sqlite3.ErrConstraintForeignKey) {
			return noSession(sessionID)
		}
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// SessionHost is the host a session runs on; "" for this machine.
func (s *Store) SessionHost(ctx context.Context, sessionID string) (string, error) {
	var h string
	err := s.db.QueryRowContext(ctx, "SELECT host FROM session_hosts WHERE session_id = ?", sessionID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.fail("read where session "+sessionID+" runs", err)
	}
	return h, nil
}

// SessionHosts maps each session that runs elsewhere to its host.
func (s *Store) SessionHosts(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT session_id, host FROM session_hosts")
	if err != nil {
		return nil, s.fail("list where sessions run", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, h string
		if err := rows.Scan(&id, &h); err != nil {
			return nil, s.fail("list where sessions run", err)
		}
		out[id] = h
	}
	return out, rows.Err()
}

// LiveSessionsOn lists the ids of the live sessions on a host.
func (s *Store) LiveSessionsOn(ctx context.Context, host string) ([]string, error) {
	ids, err := liveOn(ctx, s.db, host)
	if err != nil {
		return nil, s.fail("list the sessions on host "+host, err)
	}
	return ids, nil
}

func liveOn(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, host string) ([]string, error) {
	args := []any{host}
	marks := make([]string, len(LiveStates))
	for i, st := range LiveStates {
		marks[i] = "?"
		args = append(args, string(st))
	}
	rows, err := q.QueryContext(ctx, "SELECT s.id FROM session_hosts h JOIN sessions s ON s.id = h.session_id WHERE h.host = ? AND s.deleted = 0 AND s.state IN ("+strings.Join(marks, ", ")+") ORDER BY s.created", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func scanHost(sc scanner) (Host, error) {
	var h Host
	var added, checked int64
	if err := sc.Scan(&h.Name, &h.URL, &h.Dir, &added, &checked, &h.Status); err != nil {
		return Host{}, err
	}
	h.Added = time.Unix(0, added)
	if checked != 0 {
		h.Checked = time.Unix(0, checked)
	}
	return h, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
