package session

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbar/app/config"
	"sandbar/app/store"

	_ "github.com/mattn/go-sqlite3"
)

// TestHealAdoptsLostSessions: sessions whose rows the database lost are
// adopted back at Recover from what is on disk: one from its folder's
// session.json (its title as renamed, its project, restartable with its
// disk), one from its saved refs alone; a folder that names no project is
// left as it is; half-taken saves are removed; the notice is said once;
// the adopted session's work still merges; a second Recover adopts
// nothing again.
func TestHealAdoptsLostSessions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := trashedSession(t, f)
	if _, err := f.m.Rename(ctx, a.ID, "Renamed before the loss"); err != nil {
		t.Fatal(err)
	}
	b := trashedSession(t, f)
	aDir, bDir := f.paths.SessionDir(a.ID), f.paths.SessionDir(b.ID)
	if _, err := os.Stat(aDir.Meta()); err != nil {
		t.Fatalf("the session's folder has no session.json: %v", err)
	}
	// The database loses both rows; b's folder is gone too, its saved
	// work in Sandbar's repository is all that is left of it.
	for _, id := range []string{a.ID, b.ID} {
		if err := f.st.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(bDir.Path()); err != nil {
		t.Fatal(err)
	}
	// A folder with nothing to tell its project by, and a half-taken save.
	stray := f.paths.SessionDir("0123abcdef")
	os.MkdirAll(stray.Path(), 0o700)
	os.WriteFile(stray.SaveSpool(), make([]byte, 4096), 0o600)
	os.WriteFile(aDir.SaveSpool(), make([]byte, 4096), 0o600)
	if _, err := f.st.Session(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the row is still there: %v", err)
	}

	if err := f.m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := f.st.Session(ctx, a.ID)
	if err != nil {
		t.Fatalf("the session with a folder was not adopted: %v", err)
	}
	if got.Title != "Renamed before the loss" || got.ProjectID != a.ProjectID || got.Branch != a.Branch || got.Prompt != "trash me" || got.Agent.Command != "sh" {
		t.Errorf("adopted from its folder: title %q project %d branch %q prompt %q agent %+v; want them as they were (%q, %d, %q)",
			got.Title, got.ProjectID, got.Branch, got.Prompt, got.Agent, "Renamed before the loss", a.ProjectID, a.Branch)
	}
	wantState := StateStopped
	if in := f.m.inspect(a.ID); in.Scratch != nil {
		wantState = StateInterrupted
	}
	if got.State != wantState || !strings.HasPrefix(got.Reason, "recovered:") {
		t.Errorf("adopted from its folder: %s %q; want %s, recovered", got.State, got.Reason, wantState)
	}
	gotB, err := f.st.Session(ctx, b.ID)
	if err != nil {
		t.Fatalf("the session with saved refs alone was not adopted: %v", err)
	}
	if gotB.ProjectID != b.ProjectID || gotB.State != StateStopped || !strings.HasPrefix(gotB.Reason, "recovered:") || gotB.Title == "" {
		t.Errorf("adopted from its refs: project %d %s %q title %q", gotB.ProjectID, gotB.State, gotB.Reason, gotB.Title)
	}
	if _, err := f.st.Session(ctx, "0123abcdef"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a folder that names no project was adopted: %v", err)
	}
	if _, err := os.Stat(stray.Path()); err != nil {
		t.Errorf("a folder that could not be adopted was not left as it was: %v", err)
	}
	for _, p := range []string{stray.SaveSpool(), aDir.SaveSpool()} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the half-taken save %s is still there (%v)", p, err)
		}
	}
	r, ok, err := f.st.TakeRecovered(ctx)
	slices.Sort(r.IDs)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if err != nil || !ok || !slices.Equal(r.IDs, want) {
		t.Errorf("the notice: %+v %v %v; want %v", r, ok, err, want)
	}
	if _, ok, _ := f.st.TakeRecovered(ctx); ok {
		t.Error("the notice was said twice")
	}

	// Nothing is adopted twice.
	if err := f.m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.st.TakeRecovered(ctx); ok {
		t.Error("a second Recover adopted again")
	}

	// Its saved work comes home.
	res, err := f.m.Merge(ctx, a.ID, MergeOptions{})
	if err != nil {
		t.Fatalf("merge the adopted session: %v", err)
	}
	if out := git(t, f.repo, "show", "--format=", "--name-only", a.Branch); !strings.Contains(out, "work.txt") {
		t.Errorf("after the merge (%+v), %s holds %q; want work.txt", res, a.Branch, out)
	}
}

// TestReadMetaUntrusted: session.json is read as Sandbar writes it, and
// anything else is refused or cut down to what is safe.
func TestReadMetaUntrusted(t *testing.T) {
	dir := t.TempDir()
	d := config.NewSessionDir(filepath.Join(dir, "abcdef0123"))
	os.MkdirAll(d.Path(), 0o700)
	write := func(s string) { os.WriteFile(d.Meta(), []byte(s), 0o600) }
	for _, tc := range []struct {
		name, file string
		ok, err    bool
		title      string
		branch     string
	}{
		{name: "as written", file: `{"id":"abcdef0123","project_id":1,"project_path":"/r","title":"Fix it","branch":"sandbar/abcdef0123"}`, ok: true, title: "Fix it", branch: "sandbar/abcdef0123"},
		{name: "another session's", file: `{"id":"ffffffffff","project_id":1}`, err: true},
		{name: "not JSON", file: `{"id":`, err: true},
		{name: "a branch of its own", file: `{"id":"abcdef0123","branch":"main","title":"x"}`, ok: true, title: "x", branch: "sandbar/abcdef0123"},
		{name: "a title with escapes", file: `{"id":"abcdef0123","title":"a\u001b[31mred"}`, ok: true, title: "a [31mred", branch: "sandbar/abcdef0123"},
		{name: "too large", file: `{"id":"abcdef0123","prompt":"` + strings.Repeat("x", maxMetaFile) + `"}`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.file)
			m, ok, err := readMeta(d)
			if ok != tc.ok || (err != nil) != tc.err {
				t.Fatalf("readMeta: ok %v err %v; want ok %v, an error %v", ok, err, tc.ok, tc.err)
			}
			if ok && (m.Title != tc.title || m.Branch != tc.branch) {
				t.Errorf("title %q branch %q; want %q %q", m.Title, m.Branch, tc.title, tc.branch)
			}
		})
	}
	// A symlink is not followed.
	os.Remove(d.Meta())
	target := filepath.Join(dir, "elsewhere.json")
	os.WriteFile(target, []byte(`{"id":"abcdef0123"}`), 0o600)
	if err := os.Symlink(target, d.Meta()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := readMeta(d); ok || err == nil {
		t.Errorf("a symlinked session.json was read: ok %v err %v", ok, err)
	}
}

// TestDamagedRecord: a session whose row holds garbage (written with
// SQLite directly) reads as damaged under its id, the verbs that act on
// it say so and what to do, and Remove works on it.
func TestDamagedRecord(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := trashedSession(t, f)
	db, err := sql.Open("sqlite3", f.paths.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE sessions SET state = 'stXpped', limits = 'garbage' WHERE id = ?", s.ID); err != nil {
		t.Fatal(err)
	}
	got, err := f.m.Get(ctx, s.ID)
	if err != nil || got.State != store.StateDamaged || got.Damaged != "limits, state" {
		t.Fatalf("Get: %s %q %v; want damaged (limits, state)", got.State, got.Damaged, err)
	}
	list, err := f.m.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != s.ID || list[0].State != store.StateDamaged {
		t.Fatalf("List: %+v %v", list, err)
	}
	for name, verb := range map[string]func() error{
		"merge":   func() error { _, err := f.m.Merge(ctx, s.ID, MergeOptions{}); return err },
		"restart": func() error { _, err := f.m.Restart(ctx, s.ID); return err },
		"stop":    func() error { _, err := f.m.Stop(ctx, s.ID); return err },
		"rename":  func() error { _, err := f.m.Rename(ctx, s.ID, "x"); return err },
		"changes": func() error { _, err := f.m.Changes(ctx, s.ID); return err },
	} {
		if err := verb(); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "sandbar rm "+s.ID) {
			t.Errorf("%s of a damaged session: %v; want ErrDamaged saying to remove it", name, err)
		}
	}
	if err := f.m.Remove(ctx, s.ID, false); err != nil {
		t.Fatalf("remove the damaged session: %v", err)
	}
	if list, _ := f.m.List(ctx); len(list) != 0 {
		t.Errorf("after rm, ls still lists %+v", list)
	}
	if tr, err := f.m.Trash(ctx); err != nil || len(tr) != 1 {
		t.Errorf("the trash: %+v %v; want the damaged session there", tr, err)
	}
	if _, err := os.Stat(f.paths.SessionDir(s.ID).Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its folder is still under sessions/: %v", err)
	}
	// Nothing is adopted back: its record is in the trash.
	if err := f.m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.m.List(ctx); len(list) != 0 {
		t.Errorf("after Recover, ls lists %+v", list)
	}
}
