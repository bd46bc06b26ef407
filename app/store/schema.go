package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// migration upgrades the schema from version-1 to version.
type migration struct {
	version int
	sql     string
}

// migrations returns the schema's history, in order; the last version is
// the schema this code writes. Never edit one that has shipped: add one.
func migrations() []migration {
	return []migration{
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
	branch     TEXT NOT NULL DEFAULT '',
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
CREATE TABLE secret_names (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`},
		// v2: what the agent is doing while running, how long each step
		// of starting took, and the index the recovery scan of live
		// sessions uses.
		{2, `
ALTER TABLE sessions ADD COLUMN activity TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN timings TEXT NOT NULL DEFAULT '{}';
CREATE INDEX sessions_state ON sessions(state);
`},
		// v3: the session network: each project's own settings (its
		// network rules, the secrets its sessions get), the rules a
		// person added for one session, the connections sessions tried,
		// and where each brokered secret may go.
		{3, `
CREATE TABLE project_settings (
	project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	value      TEXT NOT NULL,
	PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
ALTER TABLE sessions ADD COLUMN net_rules TEXT NOT NULL DEFAULT '';
CREATE TABLE net_attempts (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	proto      TEXT NOT NULL,
	host       TEXT NOT NULL,
	port       INTEGER NOT NULL,
	allowed    INTEGER NOT NULL,
	addr       TEXT NOT NULL DEFAULT '',
	reason     TEXT NOT NULL DEFAULT '',
	rule       TEXT NOT NULL DEFAULT '',
	error      TEXT NOT NULL DEFAULT '',
	first      INTEGER NOT NULL,
	last       INTEGER NOT NULL,
	count      INTEGER NOT NULL,
	PRIMARY KEY (session_id, proto, host, port, allowed)
) WITHOUT ROWID;
ALTER TABLE secret_names ADD COLUMN broker_host TEXT NOT NULL DEFAULT '';
ALTER TABLE secret_names ADD COLUMN broker_header TEXT NOT NULL DEFAULT '';
`},
		// v4: a session's title, what a person calls it: made from its
		// prompt at start, renamed at will. Sessions from before have
		// none, and are shown with one made from their prompt.
		{4, `
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
`},
		// v5: the last merge of a session's work into its repository
		// (a JSON Merge; '' when never merged).
		{5, `
ALTER TABLE sessions ADD COLUMN merged TEXT NOT NULL DEFAULT '';
`},
		// v6: the trash. A deleted session keeps its row (and its log
		// lines, events and network attempts) with the time it was
		// deleted, until the trash is emptied; every read but the
		// trash's leaves it out.
		{6, `
ALTER TABLE sessions ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_deleted ON sessions(deleted) WHERE deleted != 0;
`},
		// v7: what the person decided about a repository's settings
		// files (its .sandbar/network, include lists, environment):
		// per project and kind, the hash of the content last trusted
		// (with that content, for the diff of the next change) and of
		// the content last ignored.
		{7, `
CREATE TABLE repo_trust (
	project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	kind       TEXT NOT NULL,
	decision   TEXT NOT NULL,
	hash       TEXT NOT NULL,
	content    BLOB NOT NULL,
	decided    INTEGER NOT NULL,
	PRIMARY KEY (project_id, kind, decision)
) WITHOUT ROWID;
`},
		// v8: remote hosts a session can run on (sandbar hosts add), and
		// which host each session that ran elsewhere than here ran on; a
		// session without a row ran on this machine.
		{8, `
CREATE TABLE hosts (
	name    TEXT PRIMARY KEY,
	url     TEXT NOT NULL,
	dir     TEXT NOT NULL DEFAULT '',
	added   INTEGER NOT NULL,
	checked INTEGER NOT NULL DEFAULT 0,
	status  TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE session_hosts (
	session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	host       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX session_hosts_host ON session_hosts(host);
`},
	}
}

// latestVersion is the schema version this code writes.
func latestVersion() int {
	m := migrations()
	return m[len(m)-1].version
}

// quickCheckMax is the largest file that Open runs PRAGMA quick_check on.
// The check reads every page: about 2 ms per MiB, so 30 ms at this size,
// a quarter of a second for a 128 MiB file, too long for every CLI command.
// Larger files get SQLite's own checks of the header and the schema, and
// any corruption found later is reported as ErrCorrupt by the query that
// meets it.
const quickCheckMax = 16 << 20

// check decides, before the database is opened for use, whether this code
// may open the file at path: it refuses one written by a newer Sandbar
// (ErrTooNew) and one that is not a readable Sandbar database
// (ErrCorrupt). It reads the file through SQLite, never with a file
// descriptor of its own: closing one would drop the locks this process's
// other connections hold on the file. And it reads it on a connection
// that does not switch the journal to WAL, so a refused file is not
// written.
func check(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the database %s: %w: check its permissions", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open the database %s: it is not a regular file: move it aside and Sandbar starts a fresh one", path)
	}
	db, err := sql.Open("sqlite3", fileURI(path)+fmt.Sprintf("?_busy_timeout=%d", busyTimeout))
	if err != nil {
		return fmt.Errorf("open the database %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// One statement, so both come from one snapshot even while another
	// process is applying the first migration.
	var v, objects int64
	err = db.QueryRowContext(ctx, "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)").Scan(&v, &objects)
	if err != nil {
		return openErr(path, err)
	}
	if v > int64(latestVersion()) {
		return tooNew(path, v)
	}
	if v == 0 && objects > 0 {
		return corrupt(path, "it holds tables, but not Sandbar's", nil)
	}
	if fi.Size() > quickCheckMax {
		return nil
	}
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return openErr(path, err)
	}
	defer rows.Close()
	var report, problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return openErr(path, err)
		}
		report = append(report, line)
		for _, l := range strings.Split(line, "\n") {
			if l != "" && !strings.HasPrefix(l, "*** ") { // "*** in database main ***"
				problems = append(problems, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return openErr(path, err)
	}
	if len(report) == 1 && report[0] == "ok" {
		return nil
	}
	if len(problems) == 0 {
		problems = report
	}
	return corrupt(path, "SQLite's check found: "+strings.Join(problems, "; "), nil)
}

// openErr describes an error met while opening the database at path.
func openErr(path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return corrupt(path, se.Error(), err)
	}
	return failed("open the database "+path, path, err)
}

// tooNew is the error for a file whose schema version v is newer than
// this code knows.
func tooNew(path string, v int64) error {
	return errorf(ErrTooNew, "%s was written by a newer Sandbar (schema v%d, this one knows v%d): update Sandbar", path, v, latestVersion())
}

// migrate applies the migrations after the file's version, up to target,
// each in its own transaction. The version is read again inside each
// transaction, which holds the write lock, so two processes opening the
// same old file at once apply every migration exactly once.
func (s *Store) migrate(ctx context.Context, target int) error {
	v, err := s.version(ctx, s.db)
	if err != nil {
		return err
	}
	for _, m := range migrations() {
		if v >= target {
			break
		}
		if m.version <= v {
			continue
		}
		op := fmt.Sprintf("upgrade %s to schema v%d", s.path, m.version)
		err := s.tx(ctx, op, func(tx *sql.Tx) error {
			cur, err := s.version(ctx, tx)
			if err != nil {
				return err
			}
			if cur >= m.version {
				v = cur // another process applied it meanwhile
				return nil
			}
			if cur != m.version-1 {
				return fmt.Errorf("%s: it is at v%d, which no Sandbar wrote: move it aside and Sandbar starts a fresh one", op, cur)
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return s.fail(op, err)
			}
			// PRAGMA takes no bound parameters; the version is ours.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
				return s.fail(op, err)
			}
			v = m.version
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// version reads the schema version, refusing one newer than this code
// knows (a newer Sandbar may have upgraded the file since check looked).
func (s *Store) version(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, s.fail("read the schema version of "+s.path, err)
	}
	if v > latestVersion() {
		return 0, tooNew(s.path, int64(v))
	}
	return v, nil
}
