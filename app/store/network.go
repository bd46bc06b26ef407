package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Project settings the session network reads (values are text in the
// syntax of app/net/policy and a list of names).
const (
	// ProjectNetwork is a project's network rules.
	ProjectNetwork = "network"
	// ProjectSecrets is the names of the secrets a project's sessions
	// get, one a line.
	ProjectSecrets = "secrets"
	// ProjectSudo is "off" to take sudo (inside the VM) away from the
	// project's agent user; unset or "on", the agent may use sudo.
	ProjectSudo = "sudo"
)

// ProjectSetting returns a project's setting and whether it is set.
func (s *Store) ProjectSetting(ctx context.Context, projectID int64, key string) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM project_settings WHERE project_id = ? AND key = ?", projectID, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.fail("read the project setting "+key, err)
	}
	return v, true, nil
}

// SetProjectSetting sets a project's setting; an unknown project is an
// error wrapping ErrNotFound.
func (s *Store) SetProjectSetting(ctx context.Context, projectID int64, key, value string) error {
	if strings.TrimSpace(key) == "" {
		return errors.New("change a project setting: its name is empty")
	}
	op := "change the project setting " + key
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE id = ?", projectID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return errorf(ErrNotFound, "no project %d: `sandbar project ls` lists them", projectID)
		} else if err != nil {
			return s.fail(op, err)
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO project_settings (project_id, key, value) VALUES (?, ?, ?) ON CONFLICT (project_id, key) DO UPDATE SET value = excluded.value", projectID, key, value)
		if err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// DeleteProjectSetting unsets a project's setting; unsetting one that is
// not set is not an error.
func (s *Store) DeleteProjectSetting(ctx context.Context, projectID int64, key string) error {
	op := "reset the project setting " + key
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM project_settings WHERE project_id = ? AND key = ?", projectID, key); err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// SessionNetRules returns the network rules a person added for one
// session ("Allow for this session"), in app/net/policy's syntax.
func (s *Store) SessionNetRules(ctx context.Context, id string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT net_rules FROM sessions WHERE id = ?", id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", noSession(id)
	}
	if err != nil {
		return "", s.fail("read the network rules of session "+id, err)
	}
	return v, nil
}

// UpdateSessionNetRules changes a session's own network rules with fn,
// which gets the rules as they are and returns them as they should be.
func (s *Store) UpdateSessionNetRules(ctx context.Context, id string, fn func(string) (string, error)) (string, error) {
	op := "change the network rules of session " + id
	var out string
	err := s.tx(ctx, op, func(tx *sql.Tx) error {
		var v string
		err := tx.QueryRowContext(ctx, "SELECT net_rules FROM sessions WHERE id = ?", id).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return noSession(id)
		}
		if err != nil {
			return s.fail(op, err)
		}
		if out, err = fn(v); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET net_rules = ? WHERE id = ?", out, id); err != nil {
			return s.fail(op, err)
		}
		return nil
	})
	return out, err
}

// NetAttempt is one destination a session's guest tried to reach, with
// how often and when.
type NetAttempt struct {
	Proto   string    `json:"proto"` // "tcp" or "udp"
	Host    string    `json:"host"`  // the name the guest asked for, else the address
	Port    int       `json:"port"`
	Allowed bool      `json:"allowed"`
	Addr    string    `json:"addr,omitempty"`   // the address it resolved to, if any
	Reason  string    `json:"reason,omitempty"` // the policy's words
	Rule    string    `json:"rule,omitempty"`   // the rule that decided
	Error   string    `json:"error,omitempty"`  // why an allowed one failed
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Count   int       `json:"count"`
}

// MaxNetAttempts bounds the destinations kept per session: past it, a new
// destination is not recorded (those already there keep counting), so a
// guest cannot fill the database by trying a million names.
const MaxNetAttempts = 1000

// RecordNetAttempts adds attempts to a session's record: an attempt at a
// destination already there (same protocol, host, port and verdict) adds
// its count and moves its last time, reason, rule, address and error.
// It returns how many new destinations were not recorded because the
// session has MaxNetAttempts.
func (s *Store) RecordNetAttempts(ctx context.Context, id string, batch []NetAttempt) (int, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	op := "record the network attempts of session " + id
	dropped := 0
	err := s.tx(ctx, op, func(tx *sql.Tx) error {
		var have int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM net_attempts WHERE session_id = ?", id).Scan(&have); err != nil {
			return s.fail(op, err)
		}
		for _, a := range batch {
			if a.Count <= 0 {
				a.Count = 1
			}
			if a.First.IsZero() {
				a.First = a.Last
			}
			res, err := tx.ExecContext(ctx, `UPDATE net_attempts SET count = count + ?, last = max(last, ?), addr = ?, reason = ?, rule = ?, error = ?
				WHERE session_id = ? AND proto = ? AND host = ? AND port = ? AND allowed = ?`,
				a.Count, nanos(a.Last), a.Addr, a.Reason, a.Rule, a.Error, id, a.Proto, a.Host, a.Port, a.Allowed)
			if err != nil {
				return s.fail(op, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				continue
			}
			if have >= MaxNetAttempts {
				dropped++
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO net_attempts (session_id, proto, host, port, allowed, addr, reason, rule, error, first, last, count)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id, a.Proto, a.Host, a.Port, a.Allowed, a.Addr, a.Reason, a.Rule, a.Error, nanos(a.First), nanos(a.Last), a.Count); err != nil {
				if constraint(err, sqlite3.ErrConstraintForeignKey) {
					return noSession(id)
				}
				return s.fail(op, err)
			}
			have++
		}
		return nil
	})
	return dropped, err
}

// NetAttempts returns a session's recorded attempts, the latest first; at
// most limit (0 for all).
func (s *Store) NetAttempts(ctx context.Context, id string, limit int) ([]NetAttempt, error) {
	if limit <= 0 {
		limit = MaxNetAttempts
	}
	rows, err := s.db.QueryContext(ctx, `SELECT proto, host, port, allowed, addr, reason, rule, error, first, last, count
		FROM net_attempts WHERE session_id = ? ORDER BY last DESC, host, port LIMIT ?`, id, limit)
	if err != nil {
		return nil, s.fail("read the network attempts of session "+id, err)
	}
	defer rows.Close()
	var out []NetAttempt
	for rows.Next() {
		var a NetAttempt
		var first, last int64
		if err := rows.Scan(&a.Proto, &a.Host, &a.Port, &a.Allowed, &a.Addr, &a.Reason, &a.Rule, &a.Error, &first, &last, &a.Count); err != nil {
			return nil, s.fail("read the network attempts of session "+id, err)
		}
		a.First, a.Last = fromNanos(first), fromNanos(last)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read the network attempts of session "+id, err)
	}
	return out, nil
}

// SecretBroker is where a brokered secret may go: the host its requests
// are for and the header that carries it. A secret with no host is not
// brokered: its value enters the session's environment.
type SecretBroker struct {
	Host   string `json:"host,omitempty"`
	Header string `json:"header,omitempty"`
}

// SecretBrokers returns the brokered secrets' bindings by name.
func (s *Store) SecretBrokers(ctx context.Context) (map[string]SecretBroker, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, broker_host, broker_header FROM secret_names WHERE broker_host != ''")
	if err != nil {
		return nil, s.fail("read the secrets' brokers", err)
	}
	defer rows.Close()
	out := map[string]SecretBroker{}
	for rows.Next() {
		var name string
		var b SecretBroker
		if err := rows.Scan(&name, &b.Host, &b.Header); err != nil {
			return nil, s.fail("read the secrets' brokers", err)
		}
		out[name] = b
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("read the secrets' brokers", err)
	}
	return out, nil
}

// SetSecretBroker binds a recorded secret to a host and header (an empty
// Host makes it a plain secret again); an unknown name is an error
// wrapping ErrNotFound.
func (s *Store) SetSecretBroker(ctx context.Context, name string, b SecretBroker) error {
	op := "change how the secret " + name + " is brokered"
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE secret_names SET broker_host = ?, broker_header = ? WHERE name = ?", b.Host, b.Header, name)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errorf(ErrNotFound, "no secret named %s: set it first with `sandbar secrets set %s`", name, name)
		}
		return nil
	})
}
