package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZZExp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a b é", "sandbar.db")
	s, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pr, _ := s.AddProject(ctx, Project{Name: "x", Path: "/x"})
	s.SetSetting(ctx, "log_window", "10000000")
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("sess%04d", i)
		s.CreateSession(ctx, Session{ID: id, ProjectID: pr.ID, State: "running"})
		for b := 0; b < 100; b++ {
			lines := make([]LogLine, 1000)
			for j := range lines {
				lines[j] = LogLine{Stream: "stdout", Time: time.Now(), Text: strings.Repeat("x", 80)}
			}
			if err := s.AppendLogs(ctx, id, lines); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	fi, _ := os.Stat(p)
	t.Logf("size %d MB", fi.Size()>>20)
	for _, q := range []string{"PRAGMA quick_check", "PRAGMA quick_check", "PRAGMA integrity_check", "SELECT count(*) FROM sqlite_master"} {
		ro, _ := sql.Open("sqlite3", "file:"+p+"?mode=ro")
		t0 := time.Now()
		var r string
		err := ro.QueryRow(q).Scan(&r)
		t.Logf("%s: %v %v %v", q, r, err, time.Since(t0))
		ro.Close()
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range ents {
		t.Log(e.Name())
	}
	// truncated copy
	b, _ := os.ReadFile(p)
	tp := filepath.Join(dir, "trunc.db")
	os.WriteFile(tp, b[:len(b)/2], 0o600)
	ro, _ := sql.Open("sqlite3", "file:"+tp+"?mode=ro")
	var r string
	err = ro.QueryRow("PRAGMA quick_check").Scan(&r)
	t.Logf("trunc quick_check: %.200s %v", r, err)
	err = ro.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&r)
	t.Logf("trunc master: %v %v", r, err)
	ro.Close()
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		t.Log(e.Name())
	}
}
