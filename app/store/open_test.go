package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	for i, m := range migrations() {
		if m.version != i+1 {
			t.Errorf("migration %d has version %d: versions run 1, 2, 3, ... with no gaps", i, m.version)
		}
		if strings.TrimSpace(m.sql) == "" {
			t.Errorf("migration v%d is empty", m.version)
		}
	}
	if latestVersion() < 2 {
		t.Errorf("latest version %d: there should be an upgrade path to test", latestVersion())
	}
}

func TestOpenCreatesTheFileAndItsDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a b", "ü ñ", "deeper still", "sandbar.db")
	s := openStore(t, p)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the database file is not where asked: %v", err)
	}
	fi, err := os.Stat(filepath.Dir(p))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000", "user_version": fmt.Sprint(latestVersion())} {
		var got string
		if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil || got != want {
			t.Errorf("PRAGMA %s = %q (%v), want %q", pragma, got, err, want)
		}
	}
}

func TestOpenAnEmptyFileMakesANewDatabase(t *testing.T) {
	p := dbPath(t)
	writeOld(t, p, nil)
	s := openStore(t, p)
	if _, err := s.AddProject(context.Background(), Project{Path: "/r"}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenWhereNoFileCanBe(t *testing.T) {
	dir := t.TempDir()
	// The "directory" is a file.
	blocker := filepath.Join(dir, "not a dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(blocker, "sandbar.db")); err == nil || !strings.Contains(err.Error(), "SANDBAR_HOME") {
		t.Errorf("database under a file: %v; want an error saying what to do", err)
	}
	// The database is a directory.
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("database that is a directory: %v", err)
	}
}

// oldRows inserts rows as a Sandbar at schema version v would have: into
// every table, through every column that version has. A new migration
// needs a case here for the version before it.
func oldRows(v int) string {
	switch v {
	case 1:
		return `
INSERT INTO projects (id, name, path, default_branch, created, last_used)
	VALUES (7, 'old repo', '/home/zoë/old repo', 'trunk', 1600000000000000000, 1650000000000000000);
INSERT INTO sessions (id, project_id, branch, base, prompt, agent, limits, state, reason, exit_code, error, owner, created, updated, started, ended)
	VALUES ('0ld5e55i0n', 7, 'sandbar/0ld5e55i0n', 'trunk', 'do it', '{"command":"claude","kind":"claude"}',
	'{"cpus":4,"memory_mib":4096,"disk_gib":16,"network":true}', 'stopped', 'done', 0, '',
	'{"pid":99,"host":"old-mac"}', 1600000001000000000, 1600000002000000000, 1600000001500000000, 1600000002000000000);
INSERT INTO log_lines (session_id, seq, stream, time, text) VALUES
	('0ld5e55i0n', 1, 'system', 1600000001000000000, 'booting'),
	('0ld5e55i0n', 2, 'stdout', 1600000001100000000, 'hello from v1'),
	('0ld5e55i0n', 3, 'stderr', 1600000001200000000, 'a warning');
INSERT INTO events (session_id, seq, time, kind, detail) VALUES
	('0ld5e55i0n', 1, 1600000001000000000, 'state', 'booting'),
	('0ld5e55i0n', 2, 1600000002000000000, 'state', 'stopped');
INSERT INTO secret_names (name) VALUES ('ANTHROPIC_API_KEY');
INSERT INTO settings (key, value) VALUES ('log_window', '500'), ('default_agent', 'claude');
`
	case 2:
		// v1's rows; the session has v2's activity and timings.
		v1 := oldRows(1)
		return strings.Replace(strings.Replace(v1,
			"created, updated, started, ended)",
			"created, updated, started, ended, activity, timings)", 1),
			"1600000001500000000, 1600000002000000000);",
			"1600000001500000000, 1600000002000000000, '', '{\"boot\":27000000}');", 1)
	case 3:
		// v2's rows, a connection the session tried, and v3's columns of
		// a brokered secret.
		return oldRows(2) + `
INSERT INTO net_attempts (session_id, proto, host, port, allowed, first, last, count)
	VALUES ('0ld5e55i0n', 'tcp', 'example.org', 443, 1, 1600000001000000000, 1600000001000000000, 2);
UPDATE secret_names SET broker_host = 'api.example.com', broker_header = 'x-api-key';
`
	case 4:
		// v3's rows; the session has v4's title column, and no title.
		return oldRows(3) + `
UPDATE sessions SET title = '' WHERE id = '0ld5e55i0n';
`
	case 5:
		// v4's rows; the session has v5's merged column, never merged.
		return oldRows(4) + `
UPDATE sessions SET merged = '' WHERE id = '0ld5e55i0n';
`
	case 6:
		// v5's rows; the session is not in the trash.
		return oldRows(5) + `
UPDATE sessions SET deleted = 0 WHERE id = '0ld5e55i0n';
`
	case 7:
		// v6's rows and a trust decision of v7's.
		return oldRows(6) + `
INSERT INTO repo_trust (project_id, kind, decision, hash, content, decided)
	VALUES (7, 'network', 'trusted', 'abc', X'00', 1600000003000000000);
`
	}
	return ""
}

// TestMigrateFromEveryVersion builds a database at each older schema
// version, with rows in it, and opens it with this code: the schema is
// upgraded and the rows are all there and usable.
func TestMigrateFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	for v := 1; v < latestVersion(); v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			p := dbPath(t)
			old, err := openAt(p, v)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			if err := old.db.QueryRow("PRAGMA user_version").Scan(&got); err != nil || got != v {
				t.Fatalf("built a database at v%d (%v), want v%d", got, err, v)
			}
			rows := oldRows(v)
			if rows == "" {
				t.Fatalf("no rows for schema v%d: add them to oldRows", v)
			}
			if _, err := old.db.Exec(rows); err != nil {
				t.Fatalf("rows at v%d: %v", v, err)
			}
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}

			s := openStore(t, p)
			if err := s.db.QueryRow("PRAGMA user_version").Scan(&got); err != nil || got != latestVersion() {
				t.Errorf("after Open: v%d (%v), want v%d", got, err, latestVersion())
			}
			pr, err := s.Project(ctx, 7)
			if err != nil || pr.Name != "old repo" || pr.Path != "/home/zoë/old repo" || pr.DefaultBranch != "trunk" ||
				pr.Created.UnixNano() != 1600000000000000000 || pr.LastUsed.UnixNano() != 1650000000000000000 {
				t.Errorf("old project: %+v, %v", pr, err)
			}
			x, err := s.FindSession(ctx, "0ld5")
			if err != nil {
				t.Fatal(err)
			}
			if x.ProjectID != 7 || x.State != "stopped" || x.Reason != "done" || x.ExitCode == nil || *x.ExitCode != 0 ||
				x.Agent.Command != "claude" || x.Limits.CPUs != 4 || !x.Limits.Network || x.Owner.PID != 99 ||
				x.Timings == nil || x.Ended.UnixNano() != 1600000002000000000 {
				t.Errorf("old session: %+v", x)
			}
			if l, err := s.Logs(ctx, x.ID, 0, 0); err != nil || len(l) != 3 || l[1].Text != "hello from v1" || l[2].Stream != "stderr" {
				t.Errorf("old log lines: %+v, %v", l, err)
			}
			if ev, err := s.Events(ctx, x.ID); err != nil || len(ev) != 2 || ev[1].Detail != "stopped" {
				t.Errorf("old events: %+v, %v", ev, err)
			}
			if names, err := s.SecretNames(ctx); err != nil || len(names) != 1 || names[0] != "ANTHROPIC_API_KEY" {
				t.Errorf("old secret names: %v, %v", names, err)
			}
			if all, err := s.Settings(ctx); err != nil || all["log_window"] != "500" || all["default_agent"] != "claude" {
				t.Errorf("old settings: %v, %v", all, err)
			}

			// Usable: the new columns take values, numbering goes on.
			y, err := s.UpdateSession(ctx, x.ID, func(x *Session) error {
				x.Activity = "waiting"
				x.Timings["agent"] = 2 * time.Minute
				return nil
			})
			if err != nil || y.Activity != "waiting" {
				t.Fatalf("update an upgraded session: %+v, %v", y, err)
			}
			if y, _ := s.Session(ctx, x.ID); y.Activity != "waiting" || y.Timings["agent"] != 2*time.Minute {
				t.Errorf("upgraded session after update: %+v", y)
			}
			if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "after the upgrade"}}); err != nil {
				t.Fatal(err)
			}
			if l, _ := s.LastLogs(ctx, x.ID, 1); len(l) != 1 || l[0].Seq != 4 {
				t.Errorf("numbering after the upgrade: %+v", l)
			}
			if err := s.AppendEvent(ctx, x.ID, Event{Kind: "state", Detail: "restarted"}); err != nil {
				t.Fatal(err)
			}
			if ev, _ := s.Events(ctx, x.ID); len(ev) != 3 || ev[2].Seq != 3 {
				t.Errorf("events after the upgrade: %+v", ev)
			}
			// v3: the network's tables and columns.
			if err := s.SetProjectSetting(ctx, 7, ProjectNetwork, "allow example.com"); err != nil {
				t.Errorf("project setting after the upgrade: %v", err)
			}
			if r, err := s.SessionNetRules(ctx, x.ID); err != nil || r != "" {
				t.Errorf("an upgraded session's own rules: %q, %v", r, err)
			}
			if _, err := s.RecordNetAttempts(ctx, x.ID, []NetAttempt{{Proto: "tcp", Host: "example.com", Port: 443, Last: time.Now()}}); err != nil {
				t.Errorf("record an attempt after the upgrade: %v", err)
			}
			if err := s.SetSecretBroker(ctx, "ANTHROPIC_API_KEY", SecretBroker{Host: "api.example.com", Header: "x-api-key"}); err != nil {
				t.Errorf("bind an upgraded secret: %v", err)
			}
			// v4: a session from before titles has none (its prompt makes
			// one where it is shown), and takes one.
			if x.Title != "" || x.Prompt != "do it" {
				t.Errorf("an upgraded session's title %q, prompt %q: want no title and the prompt kept", x.Title, x.Prompt)
			}
			if y, err := s.UpdateSession(ctx, x.ID, func(x *Session) error { x.Title = "Do the old thing"; return nil }); err != nil || y.Title != "Do the old thing" {
				t.Errorf("rename an upgraded session: %+v, %v", y, err)
			}
			// v5: an upgraded session was never merged, and records a merge.
			if !x.Merged.IsZero() {
				t.Errorf("an upgraded session has a merge: %+v", x.Merged)
			}
			m := Merge{Into: "main", Commit: "c0ffee", Work: "beef", Time: time.Unix(1700000000, 0).UTC()}
			if _, err := s.UpdateSession(ctx, x.ID, func(x *Session) error { x.Merged = m; return nil }); err != nil {
				t.Fatal(err)
			}
			if y, _ := s.Session(ctx, x.ID); y.Merged != m {
				t.Errorf("merge after the upgrade = %+v, want %+v", y.Merged, m)
			}
			// v6: an upgraded session is not in the trash, and can go there.
			if tr, err := s.Trashed(ctx); err != nil || len(tr) != 0 {
				t.Errorf("the trash after the upgrade: %+v, %v", tr, err)
			}
			if err := s.TrashSession(ctx, x.ID, time.Unix(1700000000, 0)); err != nil {
				t.Errorf("trash an upgraded session: %v", err)
			}
			if tr, err := s.FindTrashed(ctx, "0ld5"); err != nil || tr.ID != x.ID || tr.Deleted.Unix() != 1700000000 {
				t.Errorf("an upgraded session in the trash: %+v, %v", tr, err)
			}
		})
	}
}

// TestConcurrentOpensMigrateOnce: processes that open the same new or old
// file at once each see the full schema; none applies a migration twice.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	for _, from := range []int{0, 1} {
		t.Run(fmt.Sprintf("from v%d", from), func(t *testing.T) {
			p := dbPath(t)
			if from > 0 {
				old, err := openAt(p, from)
				if err != nil {
					t.Fatal(err)
				}
				old.Close()
			}
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for i := range errs {
				wg.Go(func() {
					s, err := Open(p)
					if err == nil {
						_, err = s.Settings(context.Background())
						s.Close()
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("open %d: %v", i, err)
				}
			}
		})
	}
}

func TestRefusesADatabaseFromANewerSandbar(t *testing.T) {
	p := dbPath(t)
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	newer := latestVersion() + 1
	if _, err := s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	before := writeOld(t, p, data)

	_, err = Open(p)
	want := fmt.Sprintf("%s was written by a newer Sandbar (schema v%d, this one knows v%d): update Sandbar", p, newer, latestVersion())
	if !errors.Is(err, ErrTooNew) || err.Error() != want {
		t.Errorf("Open = %v\nwant %s (ErrTooNew)", err, want)
	}
	if after := stateOf(t, p); !before.equal(after) {
		t.Errorf("the newer database was touched: mtime %v → %v, files %v → %v", before.mtime, after.mtime, before.entries, after.entries)
	}
}

// TestRefusesANewerSchemaStillInTheWAL: a newer Sandbar that has the file
// open has its version in the WAL, not yet in the file's header.
func TestRefusesANewerSchemaStillInTheWAL(t *testing.T) {
	p := dbPath(t)
	running := openStore(t, p)
	if _, err := running.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", latestVersion()+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); !errors.Is(err, ErrTooNew) {
		t.Errorf("Open = %v, want ErrTooNew", err)
	}
	if _, err := running.Settings(context.Background()); err != nil {
		t.Errorf("the other handle after the refusal: %v", err)
	}
}

// realDatabase is a closed Sandbar database of several pages.
func realDatabase(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "real.db")
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	_, x := seed(t, s)
	lines := make([]LogLine, 2000)
	for i := range lines {
		lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: fmt.Sprintf("line %d of some output", i)}
	}
	if err := s.AppendLogs(context.Background(), x.ID, lines); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8*4096 {
		t.Fatalf("the real database is only %d bytes", len(data))
	}
	return data
}

// foreignDatabase is an SQLite database some other program made, in the
// journal mode given.
func foreignDatabase(t *testing.T, journal string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "notes.db")
	db, err := sql.Open("sqlite3", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode = " + journal + "; CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRefusesACorruptFile(t *testing.T) {
	real := realDatabase(t)
	const page = 4096
	random := make([]byte, 8192)
	rand.New(rand.NewSource(1)).Read(random)
	garbled := append([]byte(nil), real...)
	rand.New(rand.NewSource(2)).Read(garbled[page:])
	badHeader := append([]byte(nil), real...)
	badHeader[16], badHeader[17] = 0x03, 0x00 // page size 768
	cases := map[string][]byte{
		"random bytes":                 random,
		"a text file":                  []byte("these are my notes, not a database\n"),
		"cut inside the header":        real[:60],
		"truncated to half":            real[:len(real)/2],
		"truncated to two pages":       real[:2*page],
		"truncated mid-page":           real[:3*page+100],
		"damaged header":               badHeader,
		"garbled pages":                garbled,
		"another program's SQLite":     foreignDatabase(t, "DELETE"),
		"another program's WAL SQLite": foreignDatabase(t, "WAL"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			p := dbPath(t)
			before := writeOld(t, p, data)
			_, err := Open(p)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, p+" is not a readable Sandbar database (") || !strings.HasSuffix(msg, "): move it aside and Sandbar starts a fresh one") {
				t.Errorf("message: %s", msg)
			}
			if after := stateOf(t, p); !before.equal(after) {
				t.Errorf("the corrupt file was touched: %d → %d bytes, mtime %v → %v, files %v → %v",
					len(before.data), len(after.data), before.mtime, after.mtime, before.entries, after.entries)
			}
			// Doing what the message says works.
			if err := os.Rename(p, p+".bad"); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, p)
			if _, err := s.AddProject(context.Background(), Project{Path: "/fresh"}); err != nil {
				t.Errorf("fresh database: %v", err)
			}
		})
	}
}

// TestFailedSaysWhatToDo: SQLite's errors met after Open keep their cause
// and gain what a person can do about them.
func TestFailedSaysWhatToDo(t *testing.T) {
	for _, c := range []struct {
		err  error
		is   error
		says string
	}{
		{sqlite3.Error{Code: sqlite3.ErrCorrupt}, ErrCorrupt, "/d/sandbar.db is not a readable Sandbar database (list sessions: "},
		{sqlite3.Error{Code: sqlite3.ErrNotADB}, ErrCorrupt, "move it aside and Sandbar starts a fresh one"},
		{sqlite3.Error{Code: sqlite3.ErrBusy}, sqlite3.ErrBusy, "list sessions: another Sandbar process held the database for over 5 s: try again"},
		{sqlite3.Error{Code: sqlite3.ErrFull}, sqlite3.ErrFull, "the disk holding /d/sandbar.db is full: free some space"},
		{sqlite3.Error{Code: sqlite3.ErrFull}, ErrDiskFull, "disk full"},
		// A WAL or -shm SQLite could not grow: "disk I/O error".
		{sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}, ErrDiskFull, "list sessions: disk full: the disk holding /d/sandbar.db is full"},
		{sqlite3.Error{Code: sqlite3.ErrReadonly}, sqlite3.ErrReadonly, "cannot write /d/sandbar.db: check its permissions"},
		{context.Canceled, context.Canceled, "list sessions: context canceled"},
	} {
		err := failed("list sessions", "/d/sandbar.db", c.err)
		var se sqlite3.Error
		if !errors.Is(err, c.is) && !(errors.As(err, &se) && se.Code == c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("failed(%v) = %v; want it to wrap %v and say %q", c.err, err, c.is, c.says)
		}
	}
}
