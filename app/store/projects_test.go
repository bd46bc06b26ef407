package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestProjects(t *testing.T) {
	s := openStore(t, dbPath(t))
	ctx := context.Background()

	if l, err := s.Projects(ctx); err != nil || len(l) != 0 {
		t.Fatalf("Projects of a new database: %v, %v", l, err)
	}
	a, err := s.AddProject(ctx, Project{Path: "/home/zoë/repo α", DefaultBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.Name != "repo α" || a.Created.IsZero() || !a.LastUsed.Equal(a.Created) {
		t.Errorf("added project: %+v; want an ID, the name from the path, and the times set", a)
	}
	t0 := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	b, err := s.AddProject(ctx, Project{Name: "bee", Path: "/b", Created: t0, LastUsed: t0})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.AddProject(ctx, Project{Name: "cee", Path: "/c", Created: t0, LastUsed: t0})
	if err != nil {
		t.Fatal(err)
	}

	got, err := s.Project(ctx, a.ID)
	if err != nil || got.Path != a.Path || got.Name != "repo α" || got.DefaultBranch != "main" || !got.Created.Equal(a.Created) {
		t.Errorf("Project(%d) = %+v, %v; want %+v", a.ID, got, err, a)
	}
	if got, err := s.ProjectByPath(ctx, "/b"); err != nil || got.ID != b.ID || !got.Created.Equal(t0) {
		t.Errorf("ProjectByPath = %+v, %v", got, err)
	}

	// Most recently used first, then by name.
	order := func() string {
		l, err := s.Projects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range l {
			names = append(names, p.Name)
		}
		return strings.Join(names, ",")
	}
	if got := order(); got != "repo α,bee,cee" {
		t.Errorf("order %s, want repo α,bee,cee", got)
	}
	if err := s.TouchProject(ctx, c.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := order(); got != "cee,repo α,bee" {
		t.Errorf("order after touching cee: %s", got)
	}

	// Errors.
	if _, err := s.AddProject(ctx, Project{Name: "again", Path: "/b"}); !errors.Is(err, ErrExists) ||
		!strings.Contains(err.Error(), `"bee"`) || !strings.Contains(err.Error(), "/b") {
		t.Errorf("same path again: %v; want ErrExists naming project bee", err)
	}
	if _, err := s.AddProject(ctx, Project{Name: "no path"}); err == nil || !strings.Contains(err.Error(), "give the folder") {
		t.Errorf("no path: %v", err)
	}
	for name, err := range map[string]error{
		"Project":       func() error { _, err := s.Project(ctx, 999); return err }(),
		"ProjectByPath": func() error { _, err := s.ProjectByPath(ctx, "/nowhere"); return err }(),
		"TouchProject":  s.TouchProject(ctx, 999, time.Now()),
		"RemoveProject": s.RemoveProject(ctx, 999),
	} {
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "sandbar project") {
			t.Errorf("%s of a missing project: %v; want ErrNotFound saying what to run", name, err)
		}
	}

	// Removal waits until the project has no sessions.
	if err := s.CreateSession(ctx, Session{ID: "s-of-bee", ProjectID: b.ID, State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	err = s.RemoveProject(ctx, b.ID)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), `"bee" still has 1 session: delete it`) || !strings.Contains(err.Error(), "sandbar rm") {
		t.Errorf("remove a project with a session: %v", err)
	}
	if _, err := s.Project(ctx, b.ID); err != nil {
		t.Errorf("the refused removal removed it: %v", err)
	}
	if err := s.DeleteSession(ctx, "s-of-bee"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProject(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Project(ctx, b.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed project: %v", err)
	}
	if got := order(); got != "cee,repo α" {
		t.Errorf("after removal: %s", got)
	}
	// Its path is free again.
	if _, err := s.AddProject(ctx, Project{Path: "/b"}); err != nil {
		t.Errorf("re-add a removed project: %v", err)
	}
}
