// Package store keeps Sandbar's state in one SQLite file (sandbar.db in
// the data directory): projects, sessions, their events and a bounded
// window of their log lines, secret names (never values) and settings.
//
// Several Sandbar processes (the GUI and a CLI) may open the same file at
// once: the journal is WAL, every connection waits up to 5 s for a lock,
// and every transaction takes the write lock at its start (BEGIN
// IMMEDIATE), so two read-modify-write transactions never deadlock.
//
// The schema is versioned with PRAGMA user_version and upgraded at Open by
// numbered migrations. A file written by a newer Sandbar, or one that is
// not a readable database, is refused and left exactly as it was.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver
)

// Errors, checked with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrAmbiguous = errors.New("ambiguous")
	ErrTooNew    = errors.New("database written by a newer Sandbar")
	ErrCorrupt   = errors.New("not a readable Sandbar database")
	ErrInUse     = errors.New("still in use")
)

// migration upgrades the schema from version-1 to version.
type migration struct {
	version int
	sql     string
}

// migrations, in order; the last version is the current schema. Never edit
// one that has shipped: add another.
var migrations = []migration{
	{1, `
CREATE TABLE projects (
	id             INTEGER PRIMARY KEY,
	name           TEXT NOT NULL,
	path           TEXT NOT NULL UNIQUE,
	default_branch TEXT NOT NULL DEFAULT '',
	created        INTEGER NOT NULL,
	last_used      INTEGER NOT NULL
);
CREATE TABLE sessions (
	id         TEXT PRIMARY KEY,
	project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE RESTRICT,
	branch     TEXT NOT NULL,
	base       TEXT NOT NULL DEFAULT '',
	prompt     TEXT NOT NULL DEFAULT '',
	agent      TEXT NOT NULL DEFAULT '{}',
	limits     TEXT NOT NULL DEFAULT '{}',
	state      TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	exit_code  INTEGER,
	error      TEXT NOT NULL DEFAULT '',
	owner      TEXT NOT NULL DEFAULT '{}',
	created    INTEGER NOT NULL,
	updated    INTEGER NOT NULL,
	started    INTEGER NOT NULL DEFAULT 0,
	ended      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_project ON sessions(project_id);
CREATE TABLE log_lines (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	stream     TEXT NOT NULL,
	time       INTEGER NOT NULL,
	text       TEXT NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	time       INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	detail     TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE secret_names (name TEXT PRIMARY KEY);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`},
	{2, `
ALTER TABLE sessions ADD COLUMN activity TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN timings TEXT NOT NULL DEFAULT '{}';
CREATE INDEX sessions_state ON sessions(state);
`},
}

// SchemaVersion is the schema this code writes.
var SchemaVersion = migrations[len(migrations)-1].version

// DefaultLogWindow is how many log lines per session the database keeps
// unless the setting "log_window" says otherwise.
const DefaultLogWindow = 100000

// Store is an open database.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating if need be) the database at path and upgrades its
// schema.
func Open(path string) (*Store, error) {
	return openAt(path, SchemaVersion)
}

// openAt opens and migrates up to version (tests build older databases).
func openAt(path string, version int) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory: %w", err)
	}
	if err := precheck(path); err != nil {
		return nil, err
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(version); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// precheck refuses, without writing anything, a file that is not an
// SQLite database, fails a quick check, or has a newer schema.
func precheck(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	f.Close()
	if n == 0 {
		return nil // an empty file: SQLite treats it as a new database
	}
	corrupt := func(why string) error {
		return fmt.Errorf("%s %w (%s): move it aside and Sandbar starts a fresh one", path, ErrCorrupt, why)
	}
	if n < 16 || !bytes.Equal(head, []byte("SQLite format 3\x00")) {
		return corrupt("it is not an SQLite file")
	}
	ro, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return corrupt(err.Error())
	}
	defer ro.Close()
	var v int
	if err := ro.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return corrupt(err.Error())
	}
	if v > SchemaVersion {
		return fmt.Errorf("%s was written by a newer Sandbar (schema v%d, this one knows v%d): update Sandbar: %w", path, v, SchemaVersion, ErrTooNew)
	}
	var check string
	if err := ro.QueryRow("PRAGMA quick_check").Scan(&check); err != nil {
		return corrupt(err.Error())
	}
	if check != "ok" {
		return corrupt(check)
	}
	return nil
}

func (s *Store) migrate(target int) error {
	ctx := context.Background()
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("%s %w (%v): move it aside and Sandbar starts a fresh one", s.path, ErrCorrupt, err)
	}
	for _, m := range migrations {
		if m.version <= v || m.version > target {
			continue
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("upgrade %s to schema v%d: %w", s.path, m.version, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("upgrade %s to schema v%d: %w", s.path, m.version, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("upgrade %s to schema v%d: %w", s.path, m.version, err)
		}
	}
	return nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// tx runs fn in one (immediate) transaction.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
