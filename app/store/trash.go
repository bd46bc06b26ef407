package store

import (
	"context"
	"database/sql"
	"strings"
	"time"
	"unicode/utf8"
)

// TrashedSession is a session in the trash: deleted, but kept (its row,
// log lines and events here, its folder under the data directory's trash)
// until the trash is emptied, so that it can be restored.
type TrashedSession struct {
	Session
	Deleted time.Time
}

// trashScanner reads sessionCols and then the deleted column.
type trashScanner struct {
	sc      scanner
	deleted *int64
}

func (t trashScanner) Scan(dest ...any) error { return t.sc.Scan(append(dest, t.deleted)...) }

func scanTrashed(sc scanner) (TrashedSession, error) {
	var deleted int64
	x, err := scanSession(trashScanner{sc: sc, deleted: &deleted})
	if err != nil {
		return TrashedSession{}, err
	}
	return TrashedSession{Session: x, Deleted: fromNanos(deleted)}, nil
}

func notTrashed(id string) error {
	return errorf(ErrNotFound, "no session %s in the trash: `sandbar trash ls` lists it", id)
}

// TrashSession moves a session into the trash, deleted at at (now where
// zero). A session already there, or unknown, is not found.
func (s *Store) TrashSession(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	op := "move session " + id + " to the trash"
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET deleted = ?, updated = ? WHERE id = ? AND deleted = 0", nanos(at), time.Now().UnixNano(), id)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return noSession(id)
		}
		return nil
	})
}

// RestoreSession takes a session out of the trash, as it was when it was
// deleted.
func (s *Store) RestoreSession(ctx context.Context, id string) (Session, error) {
	op := "restore session " + id
	err := s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET deleted = 0, updated = ? WHERE id = ? AND deleted != 0", time.Now().UnixNano(), id)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return notTrashed(id)
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	return s.Session(ctx, id)
}

// Trashed lists the sessions in the trash, the most recently deleted
// first.
func (s *Store) Trashed(ctx context.Context) ([]TrashedSession, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+sessionCols+", deleted FROM sessions WHERE deleted != 0 ORDER BY deleted DESC, id")
	if err != nil {
		return nil, s.fail("list the trash", err)
	}
	defer rows.Close()
	var out []TrashedSession
	for rows.Next() {
		x, err := scanTrashed(rows)
		if err != nil {
			return nil, s.fail("list the trash", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list the trash", err)
	}
	return out, nil
}

// FindTrashed finds a session in the trash by its id or a unique prefix
// of it (at least 4 characters), as FindSession does the others.
func (s *Store) FindTrashed(ctx context.Context, idOrPrefix string) (TrashedSession, error) {
	ref := strings.TrimSpace(idOrPrefix)
	if ref == "" {
		return TrashedSession{}, errorf(ErrNotFound, "no session given: name one by its id (`sandbar trash ls` lists them)")
	}
	all, err := s.Trashed(ctx)
	if err != nil {
		return TrashedSession{}, err
	}
	var found []TrashedSession
	for _, x := range all {
		if x.ID == ref {
			return x, nil
		}
		if utf8.RuneCountInString(ref) >= minPrefix && strings.HasPrefix(x.ID, ref) {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return TrashedSession{}, notTrashed(ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = x.ID
	}
	return TrashedSession{}, errorf(ErrAmbiguous, "%s matches %d sessions in the trash (%s): give more of the id", ref, len(found), strings.Join(ids, ", "))
}
