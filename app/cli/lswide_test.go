package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/workspace"
)

// TestListWide: `sandbar ls --wide` adds each session's saved changes
// against its base (CHANGES), summed by git in Sandbar's repository, and
// --json with it carries them; plain `ls` has no such column.
func TestListWide(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := r.Start(ctx, session.Options{Repo: env.Repo(t, "wide"), MemoryMiB: 512, Prompt: "Add lines",
		Agent: sessiontest.Shell(`printf 'a\nb\n' > new.txt && printf 'c\n' >> README.md`)})
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
	lines := strings.Split(strings.TrimSpace(run("ls", "--wide")), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " MERGED  CHANGES ") {
		t.Fatalf("sandbar ls --wide printed %q: want a header with CHANGES after MERGED and one session", lines)
	}
	if !regexp.MustCompile(` stopped +- +\+3-0/2 `).MatchString(lines[1]) {
		t.Errorf("sandbar ls --wide: %q; want not merged (-) and +3-0/2", lines[1])
	}
	if plain := run("ls"); strings.Contains(plain, "CHANGES") {
		t.Errorf("plain sandbar ls has the CHANGES column: %q", plain)
	}
	var js []struct{ Changes *workspace.DiffStat }
	if err := json.Unmarshal([]byte(run("ls", "--wide", "--json")), &js); err != nil || len(js) != 1 || js[0].Changes == nil ||
		*js[0].Changes != (workspace.DiffStat{Files: 2, Added: 3}) {
		t.Errorf("sandbar ls --wide --json: %+v, %v", js, err)
	}
}
