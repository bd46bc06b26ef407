// Package store keeps Sandbar's state in one SQLite file (sandbar.db in the
// data directory): projects, sessions, their events and a bounded window of
// their log lines, the names of secrets (never their values) and settings.
// It is not a cache of the VMs: it records what the session manager tells
// it and hands it back; it never looks at a VM, a clone, a session's
// directory or the keyring, and it does not decide a session's moves
// between states (app/session does). It defines the typed values the
// rows hold (State, SettingKey) so that each is written down once.
//
// Several Sandbar processes (the GUI and a CLI) may open the same file at
// once. The journal is WAL, so readers never wait for the writer; every
// connection waits up to 5 s for a lock; every write is one short
// transaction, and every transaction takes the write lock when it begins
// (BEGIN IMMEDIATE), so two read-modify-write transactions queue instead of
// deadlocking on a lock upgrade.
//
// The schema is versioned with PRAGMA user_version and upgraded at Open by
// numbered migrations. A file written by a newer Sandbar, or one that is not
// a readable database, is refused and left as it was.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"

	"sandbar/app/config"
)

// Errors returned (wrapped) by the store; check them with errors.Is.
var (
	// ErrNotFound: no project, session or secret name matches.
	ErrNotFound = errors.New("not found")
	// ErrExists: a project with that path, or a session with that id, is
	// already recorded.
	ErrExists = errors.New("already exists")
	// ErrAmbiguous: a session id prefix matches several sessions.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrInUse: a project still has sessions and cannot be removed.
	ErrInUse = errors.New("still in use")
	// ErrTooNew: the file's schema is newer than this code knows.
	ErrTooNew = errors.New("written by a newer Sandbar")
	// ErrCorrupt: the file is not a readable Sandbar database.
	ErrCorrupt = errors.New("not a readable Sandbar database")
	// ErrDiskFull: the disk holding the database has no room for a write.
	ErrDiskFull = errors.New("disk full")
)

// storeError is an error whose message reads as a whole sentence while
// errors.Is still finds its kind (one of the sentinels above) and the
// underlying cause, if any.
type storeError struct {
	msg   string
	kind  error
	cause error
}

func (e *storeError) Error() string { return e.msg }

func (e *storeError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// errorf makes an error of the given kind with a formatted message.
func errorf(kind error, format string, args ...any) error {
	return &storeError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// corrupt is the error for a file that is not a readable Sandbar database.
func corrupt(path, why string, cause error) error {
	return &storeError{
		msg:   fmt.Sprintf("%s is not a readable Sandbar database (%s): move it aside and Sandbar starts a fresh one", path, why),
		kind:  ErrCorrupt,
		cause: cause,
	}
}

// busyTimeout is how long a connection waits for another's lock, in ms.
const busyTimeout = 5000

// Store is an open Sandbar database. It is safe for concurrent use, and
// other processes may have the same file open.
type Store struct {
	db   *sql.DB
	path string
	logs *logBytes
}

// Open opens the database at path, creating the file and its directory if
// they are missing, and upgrades its schema to the one this code writes.
// A file written by a newer Sandbar is refused with ErrTooNew, one that is
// not a readable database with ErrCorrupt; either way it is left as it was.
func Open(path string) (*Store, error) {
	return openAt(path, latestVersion())
}

// openAt opens path and migrates it up to version, no further; tests use
// it to build databases as older Sandbars left them.
func openAt(path string, version int) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open the database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory for %s: %w: check its permissions or set SANDBAR_HOME", abs, err)
	}
	if err := makePrivate(abs); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := retryBusy(ctx, func() error { return check(ctx, abs) }); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("open the database %s: %w", abs, err)
	}
	// The first connection switches a new file to WAL.
	if err := retryBusy(ctx, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, openErr(abs, err)
	}
	s := &Store{db: db, path: abs, logs: newLogBytes(config.StoredLogMax)}
	if err := s.migrate(ctx, version); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// makePrivate makes the database at abs, its directory (the data
// directory) and the files SQLite keeps beside it readable by their owner
// alone, whatever the umask: it creates a missing database file 0600, so
// SQLite, which gives the -wal, -shm and -journal files the database's
// mode, makes those 0600 too; and it tightens what an older Sandbar left
// 0755 or 0644. A symlink or anything else odd is left for check to refuse.
func makePrivate(abs string) error {
	dir := filepath.Dir(abs)
	if err := tighten(dir, true, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return fmt.Errorf("create the database %s: %w", abs, err)
		}
	case !errors.Is(err, os.ErrExist):
		return fmt.Errorf("create the database %s: %w: check the permissions of %s or set SANDBAR_HOME", abs, err, dir)
	}
	for _, name := range []string{abs, abs + "-wal", abs + "-shm", abs + "-journal"} {
		if err := tighten(name, false, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tighten sets the permission bits of path to mode when it grants anyone
// but its owner anything. A directory is followed through a symlink (the
// data directory may be one); a file must be a regular file itself. A
// missing path, or one of another type than wanted, is left alone.
func tighten(path string, dir bool, mode os.FileMode) error {
	stat := os.Lstat
	if dir {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("make %s private: %w: check its permissions", path, err)
	}
	wanted := fi.Mode().IsRegular()
	if dir {
		wanted = fi.IsDir()
	}
	if !wanted || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("make %s private: %w: run chmod %o on it, or set SANDBAR_HOME to a directory of your own", path, err, mode)
	}
	return nil
}

// fileURI is the SQLite URI of the file at the absolute path abs.
func fileURI(abs string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath()
}

// dsn is the go-sqlite3 URI of the database at the absolute path abs. The
// driver reads the underscored parameters when it opens each connection:
// WAL journal, the busy timeout, foreign keys on, and BEGIN IMMEDIATE for
// every transaction. SQLite ignores them, and decodes the escaped path.
func dsn(abs string) string {
	return fileURI(abs) + fmt.Sprintf("?_journal_mode=WAL&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate", busyTimeout)
}

// retryBusy runs fn again while it fails with SQLITE_BUSY, for as long as
// the busy timeout. SQLite answers BUSY at once, without waiting, where
// waiting could deadlock: when two processes switch a new file to WAL at
// the same moment, say.
func retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(busyTimeout * time.Millisecond)
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := fn()
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || se.Code != sqlite3.ErrBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// Close closes the database. The last connection to close folds the WAL
// back into the file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close the database %s: %w", s.path, err)
	}
	return nil
}

// tx runs fn in one transaction, which holds the write lock from its start
// (BEGIN IMMEDIATE, from the DSN). An error from fn rolls it back and is
// returned as it is; op names the work in the store's own errors.
func (s *Store) tx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(op, err)
	}
	// Undoes everything unless committed, even if fn panics: a transaction
	// left open would hold the write lock against every other process.
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// fail wraps an error from SQLite with what the store was doing.
func (s *Store) fail(op string, err error) error { return failed(op, s.path, err) }

// failed wraps an error from SQLite on the database at path with op, what
// was being done, and says what to do where a person can act on the cause.
func failed(op, path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		if se.SystemErrno == syscall.ENOSPC {
			// SQLite says "disk I/O error" when the file it could not
			// grow is the -shm or the WAL: the cause is the full disk.
			se.Code = sqlite3.ErrFull
		}
		switch se.Code {
		case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
			return corrupt(path, op+": "+se.Error(), err)
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			return fmt.Errorf("%s: another Sandbar process held the database for over %d s: try again: %w", op, busyTimeout/1000, err)
		case sqlite3.ErrFull:
			return &storeError{msg: fmt.Sprintf("%s: disk full: the disk holding %s is full: free some space and try again", op, path), kind: ErrDiskFull, cause: err}
		case sqlite3.ErrReadonly, sqlite3.ErrPerm, sqlite3.ErrCantOpen:
			return fmt.Errorf("%s: cannot write %s: check its permissions: %w", op, path, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// constraint reports whether err is the SQLite constraint failure ext.
func constraint(err error, ext sqlite3.ErrNoExtended) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == ext
}
