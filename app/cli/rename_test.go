package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// TestRenameAndList: `sandbar ls` shows each session's title, made from
// its prompt; `sandbar rename` changes it through the engine, and ""
// makes it from the prompt again.
func TestRenameAndList(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := r.Start(ctx, session.Options{Repo: env.Repo(t, "shop"), MemoryMiB: 512, Agent: sessiontest.Shell("true"),
		Prompt: "Fix the login bug\nIt fails when the password has a space."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		stdout.Reset()
		if err := Run(ctx, cli, args); err != nil {
			t.Fatalf("sandbar %s: %v", strings.Join(args, " "), err)
		}
		return stdout.String()
	}
	row := func() string {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(run("ls")), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], " TITLE ") {
			t.Fatalf("sandbar ls printed %q: want a header with TITLE and one session", lines)
		}
		return lines[1]
	}
	if got := row(); !strings.Contains(got, s.ID[:8]+"  Fix the login bug  ") || !strings.Contains(got, " shop ") {
		t.Errorf("sandbar ls: %q; want the id, the title from the prompt's first line, the project", got)
	}

	if got := run("rename", s.ID[:6], "Spaces in passwords"); got != "session "+s.ID+" is now \"Spaces in passwords\"\n" {
		t.Errorf("sandbar rename printed %q", got)
	}
	if got := row(); !strings.Contains(got, "  Spaces in passwords  ") {
		t.Errorf("sandbar ls after the rename: %q", got)
	}
	var js []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(run("ls", "--json")), &js); err != nil || len(js) != 1 || js[0].Title != "Spaces in passwords" {
		t.Errorf("sandbar ls --json: %+v, %v", js, err)
	}

	run("rename", s.ID, "")
	if got, _ := env.Store.Session(ctx, s.ID); got.Title != "Fix the login bug" {
		t.Errorf("renamed to \"\": the title is %q, want the prompt's again", got.Title)
	}

	stdout.Reset()
	err = Run(ctx, cli, []string{"rename", s.ID})
	var u UsageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "give a session id and its new title") {
		t.Errorf("rename without a title: %v, want a usage error saying what to give", err)
	}
}
