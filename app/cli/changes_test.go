package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// changesAgent edits, commits and leaves files uncommitted, one with a
// terminal escape in its name and one in its content, then waits.
const changesAgent = `printf '# x\nmore\n' > README.md
mkdir -p src && echo 'package a' > src/a.go && git add src/a.go && git -c user.name=A -c user.email=a@example.com commit -qm add
printf 'one\n\033]0;pwned\007two\n' > notes.txt
printf 'x\n' > "$(printf 'evil\033[31mred.txt')"
echo ready
while read -r l; do :; done`

// TestChangesAndDiff: `sandbar changes` and `sandbar diff` read a running
// session's work through the engine, and a stopped one's from its saved
// work without one; what came from the VM reaches the terminal with its
// control characters escaped.
func TestChangesAndDiff(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The uncommitted files stay so when it stops (else Sandbar commits
	// them), to be read from the saved snapshot.
	if err := env.Store.SetSetting(ctx, store.SettingAutoCommit, "off"); err != nil {
		t.Fatal(err)
	}
	events := env.Manager.Subscribe(ctx, "") // before the session's first line
	s, err := r.Start(ctx, session.Options{Repo: env.Repo(t, "changes répo"), MemoryMiB: 512, Agent: sessiontest.Shell(changesAgent)})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, events, s.ID, "ready")

	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}
	check := func(when string, wantUntracked string) {
		t.Helper()
		out, err := run("changes", s.ID[:6])
		if err != nil {
			t.Fatalf("%s: sandbar changes: %v", when, err)
		}
		for _, want := range []string{
			"M modified  README.md\n",
			"A added     src/a.go\n",
			wantUntracked + " notes.txt\n",
			`"evil\x1b[31mred.txt"`,
			"4 files changed, 1 commit ahead of the base",
			"insertions(+), 1 deletion(-)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: sandbar changes lacks %q:\n%s", when, want, out)
			}
		}
		if strings.ContainsRune(out, 0x1b) {
			t.Errorf("%s: sandbar changes passed an escape character to the terminal:\n%q", when, out)
		}

		out, err = run("changes", "--json", s.ID)
		var ch workspace.Changes
		if err != nil || json.Unmarshal([]byte(out), &ch) != nil || len(ch.Files) != 4 || ch.Ahead != 1 {
			t.Errorf("%s: sandbar changes --json: %v\n%s", when, err, out)
		}

		out, err = run("diff", s.ID, "README.md")
		if err != nil || !strings.Contains(out, "--- a/README.md") || !strings.Contains(out, "+more") {
			t.Errorf("%s: sandbar diff README.md: %v\n%s", when, err, out)
		}
		out, err = run("diff", s.ID, "./notes.txt")
		if err != nil || !strings.Contains(out, `+\x1b]0;pwned\x07two`) || strings.ContainsRune(out, 0x1b) {
			t.Errorf("%s: sandbar diff notes.txt: %v; want its escape shown, not sent:\n%q", when, err, out)
		}
		_, err = run("diff", s.ID, "nothere.txt")
		if err == nil || !strings.Contains(err.Error(), "sandbar changes") {
			t.Errorf("%s: sandbar diff of a file the session did not change: %v; want it to point at sandbar changes", when, err)
		}
	}
	check("running", "? untracked")

	if _, err := r.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	// Stopped, and no engine needed: the saved work is read here (the
	// uncommitted files were saved as part of the snapshot, so they show
	// as added).
	check("stopped", "A added    ")

	if err := Run(ctx, cli, []string{"changes"}); err == nil {
		t.Error("sandbar changes with no id succeeded")
	}
	if err := Run(ctx, cli, []string{"changes", "ffffffffff"}); err == nil {
		t.Error("sandbar changes of a session that does not exist succeeded")
	}
}

// waitLog waits for a line the agent of session id printed holding text
// (Sandbar's own lines, such as the agent's command line, do not count),
// among the events of a subscription made before the session began.
func waitLog(t *testing.T, events <-chan session.Event, id, text string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the events ended before a log line %q from session %s", text, id)
			}
			if ev.Kind == session.EventDropped {
				t.Fatalf("events were dropped while waiting for a log line %q from session %s", text, id)
			}
			if ev.Session == id && ev.Kind == session.EventLog && ev.Log.Stream == "stdout" && strings.Contains(ev.Log.Text, text) {
				return
			}
		case <-deadline:
			t.Fatalf("no log line %q from session %s within 30 s", text, id)
		}
	}
}

// TestSkippedModulesNote: a merge's skipped submodules are listed, one
// line each, at most 20.
func TestSkippedModulesNote(t *testing.T) {
	var b strings.Builder
	skippedModulesNote(&b, nil)
	if b.String() != "" {
		t.Errorf("nothing skipped: %q", b.String())
	}
	skippedModulesNote(&b, []string{"libs/x: not a submodule of /r, so its commits stay in the session"})
	if want := "note: the session's commits in 1 submodule were not brought into the repository:\n  libs/x: not a submodule of /r, so its commits stay in the session\n"; b.String() != want {
		t.Errorf("one skipped:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	var lines []string
	for i := range 25 {
		lines = append(lines, "p"+strconv.Itoa(i)+": why")
	}
	skippedModulesNote(&b, lines)
	out := b.String()
	if !strings.HasPrefix(out, "note: the session's commits in 25 submodules") || !strings.Contains(out, "  p19: why\n  and 5 more\n") || strings.Contains(out, "p20") {
		t.Errorf("25 skipped:\n%s", out)
	}
}

// TestPrintSteering: steering files are listed one a line with what they
// steer and how to see each diff; a name with a terminal escape is shown
// quoted, and the files Sandbar uses only once trusted say so.
func TestPrintSteering(t *testing.T) {
	var b strings.Builder
	printSteering(&b, "abc123", nil, "")
	if b.String() != "" {
		t.Errorf("no steering files: %q", b.String())
	}
	printSteering(&b, "abc123", []workspace.Steering{
		{Path: "evil\x1b[2J/.gitattributes", Status: "added", Why: "git filters"},
		{Path: ".sandbar/network", Status: "modified", Why: "Sandbar's settings", NeedsTrust: true},
	}, " in this merge")
	want := "\n2 files that steer tools on your machine in this merge (see each with `sandbar diff abc123 FILE`):\n" +
		"  A added     \"evil\\x1b[2J/.gitattributes\": git filters\n" +
		"  M modified  .sandbar/network: Sandbar's settings\n" +
		"    this changes .sandbar/network, which will need your trust again before Sandbar uses it\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("an escape reached the output")
	}
}
