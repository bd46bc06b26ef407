package session

import (
	"errors"
	"strings"
	"testing"

	"sandbar/app/store"
)

func TestTitleFor(t *testing.T) {
	claude := AgentSpec{}.stored()
	custom := func(cmd string, args ...string) store.Agent { return AgentSpec{Command: cmd, Args: args}.stored() }
	for _, tc := range []struct {
		name   string
		prompt string
		agent  store.Agent
		want   string
	}{
		{"one line", "Fix the login bug", claude, "Fix the login bug"},
		{"trimmed", "   Fix the login bug  \t", claude, "Fix the login bug"},
		{"first line that says something", "\n\n   \nFix the login bug\nIt fails when the password has a space.", claude, "Fix the login bug"},
		{"a markdown heading", "## Fix the login bug\n\nsteps…", claude, "Fix the login bug"},
		{"spaces collapsed", "Fix   the\tlogin    bug", claude, "Fix the login bug"},
		{"long: cut at a word",
			"Refactor the payment service so that every provider goes through one interface and retries are shared",
			claude, "Refactor the payment service so that every provider goes…"},
		{"long with no spaces", strings.Repeat("a", 100), claude, strings.Repeat("a", 59) + "…"},
		{"not cut at 60", strings.Repeat("é", 60), claude, strings.Repeat("é", 60)},
		{"empty, Claude Code", "", claude, "Session 3fe3b7"},
		{"blank, Claude Code", " \n\t\n", claude, "Session 3fe3b7"},
		{"empty, a custom command", "", custom("make", "test"), "make test"},
		{"empty, a shell script", "", custom("sh", "-c", "go test ./...\n  && echo ok"), "go test ./... && echo ok"},
		{"a custom agent's prompt wins", "Tidy the docs", custom("true"), "Tidy the docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TitleFor(tc.prompt, tc.agent, "3fe3b76afb"); got != tc.want {
				t.Errorf("TitleFor(%q) = %q, want %q", tc.prompt, got, tc.want)
			}
		})
	}
}

func TestTitleOfASessionFromBeforeTitles(t *testing.T) {
	s := store.Session{ID: "3fe3b76afb", Prompt: "Make the tests pass\nall of them", Agent: AgentSpec{}.stored()}
	if got := Title(s); got != "Make the tests pass" {
		t.Errorf("a session with no title is shown as %q, want its prompt's first line", got)
	}
	s.Title = "Green tests"
	if got := Title(s); got != "Green tests" {
		t.Errorf("a renamed session is shown as %q, want its title", got)
	}
}

func TestCleanTitle(t *testing.T) {
	if got, err := CleanTitle("  Fix\nthe   bug\r\n"); err != nil || got != "Fix the bug" {
		t.Errorf("CleanTitle: %q, %v; want it on one line", got, err)
	}
	if got, err := CleanTitle(" \n "); err != nil || got != "" {
		t.Errorf("a blank title: %q, %v; want empty (made from the prompt again)", got, err)
	}
	if got, err := CleanTitle(strings.Repeat("ü", MaxTitle)); err != nil || got != strings.Repeat("ü", MaxTitle) {
		t.Errorf("a title of %d characters: %v", MaxTitle, err)
	}
	_, err := CleanTitle(strings.Repeat("x", MaxTitle+1))
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "keep it to 120") {
		t.Errorf("a title too long: %v; want ErrBadOptions saying how long it may be", err)
	}
}
