package session

import (
	"context"
	"testing"
)

// TestProjectSudo: sudo is on by default, off and on again per project;
// an unknown project is refused.
func TestProjectSudo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, _, err := f.m.AddProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	check := func(want bool) {
		t.Helper()
		on, err := f.m.ProjectSudo(ctx, p.ID)
		if err != nil || on != want {
			t.Fatalf("ProjectSudo = %v, %v; want %v", on, err, want)
		}
	}
	check(true)
	if err := f.m.SetProjectSudo(ctx, f.repo, false); err != nil {
		t.Fatal(err)
	}
	check(false)
	if err := f.m.SetProjectSudo(ctx, f.repo, true); err != nil {
		t.Fatal(err)
	}
	check(true)
	if err := f.m.SetProjectSudo(ctx, "/no/such/project", false); err == nil {
		t.Error("an unknown project was accepted")
	}
}
