package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Project is a repository added to Sandbar.
type Project struct {
	ID            int64     `json:"id"`
	Name          string    `json:"name"`
	Path          string    `json:"path"` // the repository's root; unique
	DefaultBranch string    `json:"default_branch"`
	Created       time.Time `json:"created"`
	LastUsed      time.Time `json:"last_used"`
}

// Times are kept as Unix nanoseconds, 0 for the zero time, so they sort
// and compare in SQL and lose nothing but the location.
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

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

const projectCols = "id, name, path, default_branch, created, last_used"

func scanProject(sc scanner) (Project, error) {
	var p Project
	var created, used int64
	err := sc.Scan(&p.ID, &p.Name, &p.Path, &p.DefaultBranch, &created, &used)
	p.Created, p.LastUsed = fromNanos(created), fromNanos(used)
	return p, err
}

// AddProject records a project and returns it with its ID. Name defaults
// to the last element of Path, Created to now and LastUsed to Created. A
// second project with the same Path is refused with an error wrapping
// ErrExists that names the one already there.
func (s *Store) AddProject(ctx context.Context, p Project) (Project, error) {
	if strings.TrimSpace(p.Path) == "" {
		return Project{}, errors.New("add project: it has no path: give the folder of its repository")
	}
	if p.Name == "" {
		p.Name = filepath.Base(p.Path)
	}
	if p.Created.IsZero() {
		p.Created = time.Now()
	}
	if p.LastUsed.IsZero() {
		p.LastUsed = p.Created
	}
	err := s.tx(ctx, "add project "+p.Path, func(tx *sql.Tx) error {
		old, err := scanProject(tx.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE path = ?", p.Path))
		if err == nil {
			return errorf(ErrExists, "%s is already the project %q (id %d)", p.Path, old.Name, old.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return s.fail("add project "+p.Path, err)
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO projects (name, path, default_branch, created, last_used) VALUES (?, ?, ?, ?, ?)",
			p.Name, p.Path, p.DefaultBranch, nanos(p.Created), nanos(p.LastUsed))
		if err != nil {
			return s.fail("add project "+p.Path, err)
		}
		p.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return Project{}, err
	}
	return p, nil
}

// Projects lists every project, most recently used first, then by name.
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+projectCols+" FROM projects ORDER BY last_used DESC, name, id")
	if err != nil {
		return nil, s.fail("list projects", err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, s.fail("list projects", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list projects", err)
	}
	return out, nil
}

// Project returns the project with the given ID, or an error wrapping
// ErrNotFound.
func (s *Store) Project(ctx context.Context, id int64) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, errorf(ErrNotFound, "no project %d: `sandbar project ls` lists them", id)
	}
	if err != nil {
		return Project{}, s.fail(fmt.Sprintf("read project %d", id), err)
	}
	return p, nil
}

// ProjectByPath returns the project whose repository is at path (compared
// as given: callers pass the repository's cleaned root), or an error
// wrapping ErrNotFound.
func (s *Store) ProjectByPath(ctx context.Context, path string) (Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE path = ?", path))
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, errorf(ErrNotFound, "no project at %s: add it with `sandbar project add %s`", path, path)
	}
	if err != nil {
		return Project{}, s.fail("read the project at "+path, err)
	}
	return p, nil
}

// TouchProject records that the project was used at t, which moves it up
// in Projects.
func (s *Store) TouchProject(ctx context.Context, id int64, t time.Time) error {
	op := fmt.Sprintf("touch project %d", id)
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE projects SET last_used = ? WHERE id = ?", nanos(t), id)
		if err != nil {
			return s.fail(op, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errorf(ErrNotFound, "no project %d: `sandbar project ls` lists them", id)
		}
		return nil
	})
}

// RemoveProject forgets a project (its repository is not touched). It
// refuses, with an error wrapping ErrInUse, while sessions of it exist;
// those in the trash are deleted with it.
func (s *Store) RemoveProject(ctx context.Context, id int64) error {
	op := fmt.Sprintf("remove project %d", id)
	return s.tx(ctx, op, func(tx *sql.Tx) error {
		p, err := scanProject(tx.QueryRowContext(ctx, "SELECT "+projectCols+" FROM projects WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return errorf(ErrNotFound, "no project %d: `sandbar project ls` lists them", id)
		}
		if err != nil {
			return s.fail(op, err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE project_id = ? AND deleted = 0", id).Scan(&n); err != nil {
			return s.fail(op, err)
		}
		if n > 0 {
			if n == 1 {
				return errorf(ErrInUse, "project %q still has 1 session: delete it first (`sandbar ls`, then `sandbar rm ID`)", p.Name)
			}
			return errorf(ErrInUse, "project %q still has %d sessions: delete them first (`sandbar ls`, then `sandbar rm ID`)", p.Name, n)
		}
		// Its sessions in the trash go with it: none could be restored
		// without it.
		if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE project_id = ? AND deleted != 0", id); err != nil {
			return s.fail(op, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM projects WHERE id = ?", id); err != nil {
			return s.fail(op, err)
		}
		return nil
	})
}
