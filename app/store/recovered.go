package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// SessionIDs lists the id of every session row, those in the trash
// included, whether or not the rest of the row reads: what the engine's
// healing compares with the session folders and saved refs on disk.
func (s *Store) SessionIDs(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT CAST(id AS TEXT) FROM sessions")
	if err != nil {
		return nil, s.fail("list the session ids", err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id sql.NullString
		if err := rows.Scan(&id); err != nil {
			return nil, s.fail("list the session ids", err)
		}
		ids[id.String] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list the session ids", err)
	}
	return ids, nil
}

// Recovered is what the engine's healing last adopted back: sessions the
// database had lost, found from their folders and saved work on disk.
type Recovered struct {
	IDs  []string  `json:"ids"`
	Time time.Time `json:"time"`
}

// recoveredKey keeps the notice in the settings table (no schema change):
// it is no setting a person sets, so it is not a SettingKey.
const recoveredKey = "recovered_notice"

// NoteRecovered adds ids to the notice of recovered sessions that the
// next TakeRecovered hands out.
func (s *Store) NoteRecovered(ctx context.Context, ids []string, at time.Time) error {
	op := "note the recovered sessions"
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		var r Recovered
		var v string
		err := tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", recoveredKey).Scan(&v)
		switch {
		case err == nil:
			_ = json.Unmarshal([]byte(v), &r) // an unreadable notice is replaced
		case !errors.Is(err, sql.ErrNoRows):
			return s.fail(op, err)
		}
		r.IDs, r.Time = append(r.IDs, ids...), at
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", recoveredKey, string(b)); err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}

// TakeRecovered returns the notice of recovered sessions and clears it, so
// that it is said once (by `sandbar ls` or the main window, whichever
// comes first); ok is false when there is none.
func (s *Store) TakeRecovered(ctx context.Context) (r Recovered, ok bool, err error) {
	op := "read the recovered sessions"
	// Most reads find none, and take no write lock for it.
	var v string
	err = s.db.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", recoveredKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	} else if err != nil {
		return r, false, s.fail(op, err)
	}
	err = s.tx(ctx, op, func(tx *sql.Tx) error {
		var v string
		err := tx.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", recoveredKey).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return s.fail(op, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM settings WHERE key = ?", recoveredKey); err != nil {
			return s.fail(op, err)
		}
		ok = json.Unmarshal([]byte(v), &r) == nil && len(r.IDs) > 0
		return nil
	})
	return r, ok, err
}
