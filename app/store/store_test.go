package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func dbPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "données à moi", "sandbar.db")
}

func open(t *testing.T, p string) *Store {
	t.Helper()
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func seed(t *testing.T, s *Store) (Project, Session) {
	t.Helper()
	ctx := context.Background()
	p, err := s.AddProject(ctx, Project{Name: "my repo", Path: "/home/me/my repo ü", DefaultBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	x := Session{ID: "abcdef1234", ProjectID: p.ID, Branch: "sandbar/abcdef1234", Prompt: "fix it", State: "running",
		Agent: Agent{Command: "claude", Args: []string{"-p"}, Kind: "claude"}, ExitCode: &code,
		Limits: Limits{CPUs: 2, MemoryMiB: 2048, DiskGiB: 8, Network: true, Timeout: time.Hour},
		Owner:  Owner{PID: 42, Start: 7, Host: "h"}, Timings: map[string]time.Duration{"clone": 50 * time.Millisecond}}
	if err := s.CreateSession(ctx, x); err != nil {
		t.Fatal(err)
	}
	return p, x
}

func TestProjectsAndSessions(t *testing.T) {
	s := open(t, dbPath(t))
	ctx := context.Background()
	p, x := seed(t, s)
	if _, err := s.AddProject(ctx, Project{Name: "again", Path: p.Path}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), `"my repo"`) {
		t.Errorf("duplicate path: %v", err)
	}
	got, err := s.ProjectByPath(ctx, p.Path)
	if err != nil || got.ID != p.ID || got.DefaultBranch != "main" {
		t.Errorf("by path: %+v %v", got, err)
	}
	if _, err := s.Project(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing project: %v", err)
	}
	if err := s.RemoveProject(ctx, p.ID); !errors.Is(err, ErrInUse) {
		t.Errorf("remove project with sessions: %v", err)
	}

	y, err := s.Session(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if y.Prompt != "fix it" || y.Agent.Args[0] != "-p" || y.Limits.Timeout != time.Hour || *y.ExitCode != 0 ||
		y.Owner.PID != 42 || y.Timings["clone"] != 50*time.Millisecond || y.Created.IsZero() {
		t.Errorf("round trip: %+v", y)
	}
	y, err = s.UpdateSession(ctx, x.ID, func(v *Session) error {
		v.State, v.Activity, v.ExitCode = "stopped", "", nil
		v.Timings["boot"] = time.Second
		return nil
	})
	if err != nil || y.State != "stopped" || y.ExitCode != nil {
		t.Fatalf("update: %+v %v", y, err)
	}
	y, _ = s.Session(ctx, x.ID)
	if y.State != "stopped" || y.ExitCode != nil || y.Timings["boot"] != time.Second || !y.Updated.After(y.Created) && !y.Updated.Equal(y.Created) {
		t.Errorf("after update: %+v", y)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateSession(ctx, x.ID, func(*Session) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fn error: %v", err)
	}
	if _, err := s.UpdateSession(ctx, "nope", func(*Session) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}

	// Prefixes.
	s.CreateSession(ctx, Session{ID: "abcdff0000", ProjectID: p.ID, Branch: "b", State: "stopped"})
	for ref, want := range map[string]error{"abcdef": nil, "abcdff": nil, "abcd": ErrAmbiguous, "abc": ErrNotFound, "zzzz": ErrNotFound, "abcdef1234": nil, "ab%d": ErrNotFound} {
		_, err := s.FindSession(ctx, ref)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("FindSession(%q) = %v, want %v", ref, err, want)
		}
	}
	if l, _ := s.Sessions(ctx, SessionFilter{States: []string{"running", "stopped"}}); len(l) != 2 {
		t.Errorf("filter: %d", len(l))
	}
	if l, _ := s.Sessions(ctx, SessionFilter{ProjectID: p.ID + 1}); len(l) != 0 {
		t.Errorf("project filter: %d", len(l))
	}
	if err := s.CreateSession(ctx, Session{ID: "orphan", ProjectID: 999, Branch: "b", State: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("session of a missing project: %v", err)
	}

	// Events, logs, delete cascades.
	s.AppendEvent(ctx, x.ID, Event{Kind: "state", Detail: "booting"})
	s.AppendEvent(ctx, x.ID, Event{Kind: "state", Detail: "running"})
	if ev, _ := s.Events(ctx, x.ID); len(ev) != 2 || ev[1].Seq != 2 || ev[1].Detail != "running" {
		t.Errorf("events: %+v", ev)
	}
	s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "héllo", Time: time.Now()}})
	if err := s.DeleteSession(ctx, x.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	s.db.QueryRow("SELECT COUNT(*) FROM log_lines").Scan(&n)
	var m int
	s.db.QueryRow("SELECT COUNT(*) FROM events").Scan(&m)
	if n != 0 || m != 0 {
		t.Errorf("cascade left %d lines, %d events", n, m)
	}
	if err := s.DeleteSession(ctx, x.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

func TestLogWindow(t *testing.T) {
	s := open(t, dbPath(t))
	ctx := context.Background()
	_, x := seed(t, s)
	if err := s.SetSetting(ctx, "log_window", "1000"); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 50; b++ {
		lines := make([]LogLine, 100)
		for i := range lines {
			lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: fmt.Sprintf("line %d", b*100+i+1)}
		}
		if err := s.AppendLogs(ctx, x.ID, lines); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.Logs(ctx, x.ID, 0, 100000)
	if len(all) != 1000 || all[0].Seq != 4001 || all[999].Seq != 5000 || all[999].Text != "line 5000" {
		t.Errorf("window: %d lines, first %+v", len(all), all[0])
	}
	last, _ := s.LastLogs(ctx, x.ID, 3)
	if len(last) != 3 || last[0].Seq != 4998 || last[2].Seq != 5000 {
		t.Errorf("last: %+v", last)
	}
	page, _ := s.Logs(ctx, x.ID, 4990, 5)
	if len(page) != 5 || page[0].Seq != 4991 {
		t.Errorf("page: %+v", page)
	}
	if err := s.AppendLogs(ctx, "nope", []LogLine{{Text: "x"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("logs of a missing session: %v", err)
	}
}

func TestSecretNamesAndSettings(t *testing.T) {
	s := open(t, dbPath(t))
	ctx := context.Background()
	for _, n := range []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "GITHUB_TOKEN"} {
		if err := s.AddSecretName(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := s.SecretNames(ctx)
	if strings.Join(names, ",") != "ANTHROPIC_API_KEY,GITHUB_TOKEN" {
		t.Errorf("names %v", names)
	}
	s.RemoveSecretName(ctx, "GITHUB_TOKEN")
	if names, _ := s.SecretNames(ctx); len(names) != 1 {
		t.Errorf("after remove: %v", names)
	}
	if _, ok, _ := s.Setting(ctx, "x"); ok {
		t.Error("unset setting is set")
	}
	s.SetSetting(ctx, "x", "1")
	s.SetSetting(ctx, "x", "2")
	if v, ok, _ := s.Setting(ctx, "x"); !ok || v != "2" {
		t.Errorf("setting %q %v", v, ok)
	}
	if all, _ := s.Settings(ctx); all["x"] != "2" || len(all) != 1 {
		t.Errorf("settings %v", all)
	}
}

// TestMigrateFromEveryVersion builds a database at each older schema
// version, with data, and opens it with this code.
func TestMigrateFromEveryVersion(t *testing.T) {
	for v := 1; v < SchemaVersion; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			p := dbPath(t)
			old, err := openAt(p, v)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixNano()
			old.db.Exec("INSERT INTO projects (name, path, created, last_used) VALUES ('p', '/p', ?, ?)", now, now)
			old.db.Exec("INSERT INTO sessions (id, project_id, branch, state, created, updated) VALUES ('s1', 1, 'sandbar/s1', 'stopped', ?, ?)", now, now)
			old.db.Exec("INSERT INTO log_lines (session_id, seq, stream, time, text) VALUES ('s1', 1, 'stdout', ?, 'kept')", now)
			old.Close()

			s := open(t, p)
			var got int
			s.db.QueryRow("PRAGMA user_version").Scan(&got)
			if got != SchemaVersion {
				t.Errorf("version %d, want %d", got, SchemaVersion)
			}
			x, err := s.Session(context.Background(), "s1")
			if err != nil || x.State != "stopped" || x.Activity != "" {
				t.Errorf("old session: %+v %v", x, err)
			}
			if _, err := s.UpdateSession(context.Background(), "s1", func(x *Session) error { x.Activity = "waiting"; return nil }); err != nil {
				t.Errorf("update a migrated session: %v", err)
			}
			if l, _ := s.Logs(context.Background(), "s1", 0, 10); len(l) != 1 || l[0].Text != "kept" {
				t.Errorf("old logs: %+v", l)
			}
		})
	}
}

func TestRefusesNewerAndCorrupt(t *testing.T) {
	p := dbPath(t)
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1))
	s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	s.Close()
	before, _ := os.ReadFile(p)
	fi1, _ := os.Stat(p)
	_, err = Open(p)
	if !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), "update Sandbar") {
		t.Errorf("newer: %v", err)
	}
	after, _ := os.ReadFile(p)
	fi2, _ := os.Stat(p)
	if !bytes.Equal(before, after) || !fi1.ModTime().Equal(fi2.ModTime()) {
		t.Error("a newer database was modified")
	}

	for name, data := range map[string][]byte{
		"random":    bytes.Repeat([]byte("not a database at all "), 300),
		"truncated": before[:len(before)/3],
	} {
		t.Run(name, func(t *testing.T) {
			p := dbPath(t)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, data, 0o600)
			_, err := Open(p)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "move it aside") {
				t.Errorf("corrupt: %v", err)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
				t.Error("the corrupt file was modified")
			}
		})
	}
}

// TestTwoHandles: two handles on one file, as a GUI and a CLI would have,
// writing at once without "database is locked".
func TestTwoHandles(t *testing.T) {
	p := dbPath(t)
	a := open(t, p)
	b := open(t, p)
	_, x := seed(t, a)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for _, s := range []*Store{a, b} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				_, err := s.UpdateSession(ctx, x.ID, func(v *Session) error {
					v.Timings["n"]++
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "x"}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	y, _ := a.Session(ctx, x.ID)
	if y.Timings["n"] != 400 {
		t.Errorf("lost updates: %d of 400", y.Timings["n"])
	}
	if l, _ := b.Logs(ctx, x.ID, 0, 1000); len(l) != 200 {
		t.Errorf("lines %d of 200", len(l))
	}
}

// TestSecondProcess: another process writes logs while this one updates.
func TestSecondProcess(t *testing.T) {
	p := dbPath(t)
	s := open(t, p)
	_, x := seed(t, s)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), "STORE_HELPER_DB="+p, "STORE_HELPER_SESSION="+x.ID)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := s.UpdateSession(context.Background(), x.ID, func(v *Session) error { v.Reason = fmt.Sprint(i); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer process: %v\n%s", err, out.String())
	}
	if l, _ := s.Logs(context.Background(), x.ID, 0, 10000); len(l) != 2000 {
		t.Errorf("lines from the other process: %d of 2000", len(l))
	}
}

func TestHelperWriter(t *testing.T) {
	p := os.Getenv("STORE_HELPER_DB")
	if p == "" {
		t.Skip("helper process for TestSecondProcess")
	}
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 200; i++ {
		lines := make([]LogLine, 10)
		for j := range lines {
			lines[j] = LogLine{Stream: "stderr", Text: "from the other process"}
		}
		if err := s.AppendLogs(context.Background(), os.Getenv("STORE_HELPER_SESSION"), lines); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkAppendLogs(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "sandbar.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p, _ := s.AddProject(ctx, Project{Name: "p", Path: "/p"})
	s.CreateSession(ctx, Session{ID: "s", ProjectID: p.ID, Branch: "b", State: "running"})
	lines := make([]LogLine, 100)
	for i := range lines {
		lines[i] = LogLine{Stream: "stdout", Time: time.Now(), Text: strings.Repeat("x", 80)}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := s.AppendLogs(ctx, "s", lines); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(lines))/time.Since(start).Seconds(), "lines/s")
}

var _ = sql.ErrNoRows
