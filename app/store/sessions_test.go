package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSessionRoundTrip(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	before := time.Now()
	p, x := seed(t, s)

	got, err := s.Session(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Created.Before(before) || !got.Updated.Equal(got.Created) {
		t.Errorf("Created %v, Updated %v: want both set to the time of CreateSession", got.Created, got.Updated)
	}
	if !got.Started.Equal(x.Started) || !got.Ended.IsZero() {
		t.Errorf("Started %v, Ended %v", got.Started, got.Ended)
	}
	// Every other field comes back as it went in.
	want := x
	want.Created, want.Updated, want.Started = got.Created, got.Updated, got.Started
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if got.ProjectID != p.ID {
		t.Errorf("project %d, want %d", got.ProjectID, p.ID)
	}

	// Given times are kept; a nil exit code and timings come back as
	// nil and an empty map.
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := s.CreateSession(ctx, Session{ID: "bare", ProjectID: p.ID, State: "provisioning", Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	bare, err := s.Session(ctx, "bare")
	if err != nil || !bare.Created.Equal(t0) || bare.ExitCode != nil || bare.Timings == nil || len(bare.Timings) != 0 || bare.Agent.Args != nil {
		t.Errorf("bare session: %+v, %v", bare, err)
	}

	// Errors.
	if err := s.CreateSession(ctx, Session{ID: x.ID, ProjectID: p.ID, State: "running"}); !errors.Is(err, ErrExists) {
		t.Errorf("same id again: %v", err)
	}
	if err := s.CreateSession(ctx, Session{ID: "orphan", ProjectID: 999, State: "running"}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no project 999") {
		t.Errorf("session of a missing project: %v", err)
	}
	if err := s.CreateSession(ctx, Session{ProjectID: p.ID, State: "running"}); err == nil {
		t.Error("a session without an id was recorded")
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, ErrNotFound) || err.Error() != "no session nope: run `sandbar ls` to see the sessions" {
		t.Errorf("missing session: %v", err)
	}
}

func TestUpdateSession(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	_, x := seed(t, s)
	orig, _ := s.Session(ctx, x.ID)

	got, err := s.UpdateSession(ctx, x.ID, func(v *Session) error {
		v.ID = "renamed" // ignored
		v.State, v.Activity, v.Reason = "stopped", "", "stopped by hand"
		v.ExitCode = nil
		v.Timings["agent"] = 90 * time.Second
		v.Ended = time.Unix(1800000000, 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != x.ID || got.State != "stopped" || got.ExitCode != nil || got.Timings["agent"] != 90*time.Second || !got.Updated.After(orig.Updated) {
		t.Errorf("UpdateSession returned %+v", got)
	}
	stored, _ := s.Session(ctx, x.ID)
	if !reflect.DeepEqual(stored, got) {
		t.Errorf("stored %+v\nreturned %+v", stored, got)
	}
	if !stored.Created.Equal(orig.Created) || stored.Timings["clone"] != orig.Timings["clone"] {
		t.Errorf("fields fn did not touch changed: %+v", stored)
	}

	// fn's error aborts the change and comes back as it is.
	boom := errors.New("boom")
	if _, err := s.UpdateSession(ctx, x.ID, func(v *Session) error { v.State = "failed"; return boom }); err != boom {
		t.Errorf("fn error: %v, want boom itself", err)
	}
	if after, _ := s.Session(ctx, x.ID); after.State != "stopped" || !after.Updated.Equal(stored.Updated) {
		t.Errorf("an aborted update was written: %+v", after)
	}
	if _, err := s.UpdateSession(ctx, "nope", func(*Session) error { t.Error("fn ran for a missing session"); return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("update a missing session: %v", err)
	}
	if _, err := s.UpdateSession(ctx, x.ID, func(v *Session) error { v.ProjectID = 999; return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("move a session to a missing project: %v", err)
	}
	// A store call that waits on the context gives up with it.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.UpdateSession(cancelled, x.ID, func(*Session) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestFindSession(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p, _ := seed(t, s) // abcdef1234
	for i, id := range []string{"abcdff0000", "abc", "ABCDEF9999", "zz%_x1", "ünïcødé-1", "12345678", "1234"} {
		x := Session{ID: id, ProjectID: p.ID, State: "stopped", Created: time.Unix(int64(1000+i), 0)}
		if err := s.CreateSession(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ref, want string // want: the id found, or the error's sentinel name
		msg       string // in the error
	}{
		{"abcdef1234", "abcdef1234", ""},
		{" abcdef1234\n", "abcdef1234", ""},
		{"abcdef", "abcdef1234", ""},
		{"abcdf", "abcdff0000", ""},
		{"abc", "abc", ""},   // exact, though short
		{"1234", "1234", ""}, // exact beats being a prefix of 12345678
		{"12345", "12345678", ""},
		{"ABCD", "ABCDEF9999", ""}, // prefixes are case-sensitive
		{"ünïc", "ünïcødé-1", ""},  // 4 characters, not 4 bytes
		{"abcd", "ambiguous", "abcd matches 2 sessions (abcdef1234, abcdff0000): give more of the id"},
		{"ab", "not found", "give at least 4 characters"},
		{"ünï", "not found", "give at least 4 characters"},
		{"zzzz", "not found", "no session zzzz: run `sandbar ls`"},
		{"zz%_", "zz%_x1", ""}, // LIKE wildcards are plain characters
		{"zz%%", "not found", "no session zz%%"},
		{"", "not found", "no session given"},
	} {
		got, err := s.FindSession(ctx, c.ref)
		switch c.want {
		case "ambiguous", "not found":
			sentinel := map[string]error{"ambiguous": ErrAmbiguous, "not found": ErrNotFound}[c.want]
			if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("FindSession(%q) = %q, %v; want %s mentioning %q", c.ref, got.ID, err, c.want, c.msg)
			}
		default:
			if err != nil || got.ID != c.want {
				t.Errorf("FindSession(%q) = %q, %v; want %q", c.ref, got.ID, err, c.want)
			}
		}
	}

	// Many matches: the error lists some and counts the rest.
	for i := range 12 {
		if err := s.CreateSession(ctx, Session{ID: fmt.Sprintf("many%02d", i), ProjectID: p.ID, State: "stopped"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.FindSession(ctx, "many"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "matches 12 sessions") || !strings.Contains(err.Error(), "and 4 more") {
		t.Errorf("12 matches: %v", err)
	}
}

func TestSessionsFilterAndOrder(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p1, err := s.AddProject(ctx, Project{Path: "/one"})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.AddProject(ctx, Project{Path: "/two"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	for i, c := range []struct {
		id      string
		project int64
		state   State
	}{{"s1", p1.ID, "running"}, {"s2", p2.ID, "stopped"}, {"s3", p1.ID, "failed"}, {"s4", p2.ID, "running"}, {"s5", p1.ID, "interrupted"}} {
		if err := s.CreateSession(ctx, Session{ID: c.id, ProjectID: c.project, State: c.state, Created: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		f    SessionFilter
		want string
	}{
		{SessionFilter{}, "s5,s4,s3,s2,s1"},
		{SessionFilter{ProjectID: p1.ID}, "s5,s3,s1"},
		{SessionFilter{States: []State{"running"}}, "s4,s1"},
		{SessionFilter{States: []State{"running", "failed", "interrupted"}}, "s5,s4,s3,s1"},
		{SessionFilter{ProjectID: p2.ID, States: []State{"running", "provisioning"}}, "s4"},
		{SessionFilter{ProjectID: 999}, ""},
		{SessionFilter{States: []State{"booting"}}, ""},
	} {
		l, err := s.Sessions(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range l {
			ids = append(ids, x.ID)
		}
		if got := strings.Join(ids, ","); got != c.want {
			t.Errorf("Sessions(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
}

func TestDeleteSessionCascades(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()
	p, x := seed(t, s)
	if err := s.CreateSession(ctx, Session{ID: "other", ProjectID: p.ID, State: "running"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{x.ID, "other"} {
		if err := s.AppendLogs(ctx, id, []LogLine{{Stream: "stdout", Text: "a"}, {Stream: "stderr", Text: "b"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendEvent(ctx, id, Event{Kind: "state", Detail: "running"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(ctx, x.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, x.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted session: %v", err)
	}
	count := func(table, id string) int {
		var n int
		if err := s.db.QueryRow("SELECT count(*) FROM "+table+" WHERE session_id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, m := count("log_lines", x.ID), count("events", x.ID); n != 0 || m != 0 {
		t.Errorf("the deleted session left %d log lines and %d events", n, m)
	}
	if n, m := count("log_lines", "other"), count("events", "other"); n != 2 || m != 1 {
		t.Errorf("the other session has %d log lines and %d events, want 2 and 1", n, m)
	}
	if err := s.DeleteSession(ctx, x.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	// A new session may take the id again and starts from line 1.
	if err := s.CreateSession(ctx, Session{ID: x.ID, ProjectID: p.ID, State: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, x.ID, []LogLine{{Stream: "stdout", Text: "new"}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Logs(ctx, x.ID, 0, 0); len(l) != 1 || l[0].Seq != 1 || l[0].Text != "new" {
		t.Errorf("lines of the reused id: %+v", l)
	}
}

// TestUpdateSessionPanicReleasesTheLock: a panic in fn must not leave the
// write lock held against every other process.
func TestUpdateSessionPanicReleasesTheLock(t *testing.T) {
	p := dbPath(t)
	s := openStore(t, p)
	other := openStore(t, p)
	ctx := context.Background()
	_, x := seed(t, s)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic in fn did not come through")
			}
		}()
		s.UpdateSession(ctx, x.ID, func(v *Session) error {
			v.State = "failed"
			panic("boom")
		})
	}()
	start := time.Now()
	if _, err := other.UpdateSession(ctx, x.ID, func(v *Session) error { v.Reason = "after the panic"; return nil }); err != nil {
		t.Fatalf("update after a panic: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the update after a panic waited %v for the lock", d)
	}
	if y, _ := other.Session(ctx, x.ID); y.State != "running" || y.Reason != "after the panic" {
		t.Errorf("after the panic: state %q reason %q; want the panicking change undone", y.State, y.Reason)
	}
}

// TestUnreadableSessionRow: a row whose content does not parse reads as
// damaged, named by its id as on disk, without its raw content, in every
// read (one, a prefix, the list), beside the rows that read whole; it
// cannot be updated, and it can be trashed and deleted.
func TestUnreadableSessionRow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, set string
		want      string // Damaged
	}{
		{"limits not JSON", "limits = '{not json'", "limits"},
		{"a state never written", "state = 'stXpped'", "state"},
		{"a number that is text", "created = 'yesterday'", "created"},
		{"several columns", "agent = x'00ff', owner = 'nul', merged = '['", "agent, merged, owner"},
		{"bytes that are not text", "title = x'c328', reason = x'ff'", "reason, title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, dbPath(t))
			p, x := seed(t, s)
			whole := x
			whole.ID, whole.Branch = "0123456789", "sandbar/0123456789"
			if err := s.CreateSession(ctx, whole); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec("UPDATE sessions SET "+tc.set+" WHERE id = ?", x.ID); err != nil {
				t.Fatal(err)
			}
			check := func(how string, y Session, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if y.ID != x.ID || y.Damaged != tc.want || y.State != StateDamaged || y.Activity != "" {
					t.Errorf("%s: id %q damaged %q state %q activity %q; want %s, %q, damaged", how, y.ID, y.Damaged, y.State, y.Activity, x.ID, tc.want)
				}
				if !strings.Contains(y.Reason, "sandbar rm "+x.ID) || strings.Contains(y.Reason, "stXpped") || strings.Contains(y.Reason, "not json") {
					t.Errorf("%s: reason %q; want the way out (sandbar rm %s) and none of the raw content", how, y.Reason, x.ID)
				}
				if y.ProjectID != p.ID {
					t.Errorf("%s: project %d; want what still reads (%d)", how, y.ProjectID, p.ID)
				}
			}
			y, err := s.Session(ctx, x.ID)
			check("Session", y, err)
			y, err = s.FindSession(ctx, x.ID[:4])
			check("FindSession by prefix", y, err)
			all, err := s.Sessions(ctx, SessionFilter{})
			if err != nil || len(all) != 2 {
				t.Fatalf("Sessions: %d, %v; want both rows", len(all), err)
			}
			for _, y := range all {
				if y.ID == x.ID {
					check("Sessions", y, nil)
				} else if y.Damaged != "" || y.State != "running" {
					t.Errorf("the whole row reads damaged %q state %q", y.Damaged, y.State)
				}
			}
			_, err = s.UpdateSession(ctx, x.ID, func(v *Session) error { v.State = StateStopped; return nil })
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "sandbar rm "+x.ID) {
				t.Errorf("update of a damaged row: %v; want ErrDamaged saying to remove it", err)
			}
			if err := s.TrashSession(ctx, x.ID, time.Time{}); err != nil {
				t.Fatalf("trash it: %v", err)
			}
			if tr, err := s.FindTrashed(ctx, x.ID); err != nil || tr.Damaged != tc.want {
				t.Errorf("in the trash: %+v, %v", tr.Session, err)
			}
			if err := s.DeleteSession(ctx, x.ID); err != nil {
				t.Errorf("delete it: %v", err)
			}
		})
	}
}
