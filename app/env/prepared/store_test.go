package prepared

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func build(t *testing.T, s *Store, project, key, baseKey, commit string, fail bool) Env {
	t.Helper()
	b, err := s.Begin(project, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.Disk(), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b.LogPath(), []byte("onCreateCommand: ok\n"), 0o600)
	e := Env{BaseKey: baseKey, Commit: commit, Files: 3}
	if fail {
		e, err = b.Fail(e, errors.New("postCreateCommand exited 2"))
	} else {
		e, err = b.Finish(e)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStoreFindsByBaseKeyAndCommit(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	a := build(t, s, "p1", "k-a", "base", "c1", false)
	time.Sleep(10 * time.Millisecond)
	b := build(t, s, "p1", "k-b", "base", "c2", false)
	build(t, s, "p1", "k-f", "base", "c3", true)
	build(t, s, "p2", "k-other", "base", "c1", false)

	if a.State != StateReady || a.Path == "" || a.Size == 0 || a.Project != "p1" {
		t.Errorf("a finished build: %+v", a)
	}
	if fi, err := os.Stat(a.Path); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("the disk is not read-only: %v, %v", fi, err)
	}
	if got, ok := s.Find("p1", "base", "c1"); !ok || got.Key != "k-a" {
		t.Errorf("Find on c1 = %s, %v; want k-a (made on that commit)", got.Key, ok)
	}
	if got, ok := s.Find("p1", "base", "c9"); !ok || got.Key != b.Key {
		t.Errorf("Find on another commit = %s, %v; want the newest ready one, k-b", got.Key, ok)
	}
	if _, ok := s.Find("p1", "other", "c1"); ok {
		t.Error("Find took another base key")
	}
	all, err := s.List("p1")
	if err != nil || len(all) != 3 || all[0].Key != "k-f" {
		t.Fatalf("List = %+v, %v; want 3, newest (the failed one) first", all, err)
	}
	if f := all[0]; f.State != StateFailed || !strings.Contains(f.Error, "exited 2") || f.Path != "" {
		t.Errorf("the failed build: %+v", f)
	}
	if log, err := os.ReadFile(all[0].Log); err != nil || !strings.Contains(string(log), "onCreateCommand") {
		t.Errorf("the failed build's log: %q, %v", log, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "p1", "k-f", diskFile)); err == nil {
		t.Error("the failed build kept its disk")
	}
}

func TestStoreReplacesAKeyWhole(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	build(t, s, "p", "k", "base", "c1", true)
	e := build(t, s, "p", "k", "base", "c1", false)
	if e.State != StateReady {
		t.Errorf("rebuilt: %+v", e)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir, "p")); len(entries) != 2 { // k and tmp
		t.Errorf("left behind: %v", entries)
	}
}

func TestStoreRefusesOddNames(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	for _, n := range [][2]string{{"../x", "k"}, {"p", "a/b"}, {"p", ".."}, {"", "k"}} {
		if _, err := s.Begin(n[0], n[1]); err == nil {
			t.Errorf("Begin(%q, %q) took it", n[0], n[1])
		}
	}
}

func TestStorePrune(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	old := build(t, s, "p", "k-old", "base", "c1", false)
	usedOld := build(t, s, "p", "k-used", "base", "c2", false)
	build(t, s, "p", "k-f1", "base", "c3", true)
	build(t, s, "p", "k-f2", "base", "c4", true)
	newest := build(t, s, "p", "k-new", "base", "c5", false)
	past := time.Now().Add(-30 * 24 * time.Hour)
	for _, e := range []Env{old, usedOld} {
		os.Chtimes(e.Path, past, past)
	}
	os.Chtimes(newest.Path, past, past)
	stale, _ := s.Begin("p", "k-dead")
	os.Chtimes(stale.Dir(), past, past)

	removed, err := s.Prune(context.Background(), time.Now(), 14*24*time.Hour, func(p string) bool { return p == usedOld.Path })
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range removed {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, " ") != "k-f1 k-old" {
		t.Errorf("pruned %v; want the older failure and the unused old one (the newest of each kind and the used one stay)", keys)
	}
	left, _ := s.List("p")
	if len(left) != 3 {
		t.Errorf("left %d, want 3", len(left))
	}
	if _, err := os.Stat(stale.Dir()); err == nil {
		t.Error("a build a dead process left was not removed")
	}
}

// TestStoreFailedRemakeKeepsTheReadyOne: a failed build of a key whose
// ready environment exists is kept beside it, and the ready one stays;
// the next good build clears the failure.
func TestStoreFailedRemakeKeepsTheReadyOne(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	good := build(t, s, "p", "k", "base", "c1", false)
	time.Sleep(10 * time.Millisecond)
	bad := build(t, s, "p", "k", "base", "c1", true)
	if bad.Folder != "k"+FailedSuffix || bad.State != StateFailed {
		t.Errorf("the failed remake: %+v", bad)
	}
	if e, ok := s.Find("p", "base", "c1"); !ok || e.Path != good.Path {
		t.Errorf("the ready one is gone after a failed remake: %+v %v", e, ok)
	}
	all, _ := s.List("p")
	if len(all) != 2 || all[0].State != StateFailed {
		t.Errorf("List: %+v", all)
	}
	build(t, s, "p", "k", "base", "c1", false)
	if all, _ := s.List("p"); len(all) != 1 || all[0].State != StateReady {
		t.Errorf("a good build left the failure: %+v", all)
	}
}

// TestBuilding: a build in progress is listed with its step while its
// process lives.
func TestBuilding(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	b, err := s.Begin("p", "k")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Building("p"); len(got) != 0 {
		t.Errorf("a build with no progress is listed: %+v", got)
	}
	if err := b.SetProgress(Progress{Step: "running onCreateCommand", Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Building("p")
	if err != nil || len(got) != 1 || got[0].Step != "running onCreateCommand" || got[0].Key != "k" || got[0].Log != b.LogPath() {
		t.Fatalf("Building = %+v, %v", got, err)
	}
	os.WriteFile(filepath.Join(b.Dir(), progressFile), []byte(`{"project":"p","key":"k","pid":999999999}`), 0o600)
	if got, _ := s.Building("p"); len(got) != 0 {
		t.Errorf("a build of a dead process is listed: %+v", got)
	}
}
