package cli

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from what the commands print")

// claudeLog records a Claude Code session whose log is a real capture of
// its stdout (app/readable/testdata/tools.jsonl: tool calls, a failing
// command, terminal escapes in a result), after the person's prompt and
// a line of Sandbar's, and returns its id and the capture's lines.
func claudeLog(t *testing.T, env *Env) (string, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(env.Paths.Home, "sandbar.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env.Store = func() (*store.Store, error) { return st, nil }
	p, err := st.AddProject(ctx, store.Project{Name: "repo", Path: "/tmp/repo", DefaultBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	const id = "c1a0de5e55"
	if err := st.CreateSession(ctx, store.Session{ID: id, ProjectID: p.ID, State: "stopped", Branch: "sandbar/" + id,
		Agent: store.Agent{Command: "claude", Kind: "claude"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../readable/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 8, 35, 0, 0, time.UTC)
	lines := []store.LogLine{{Stream: "system", Time: at, Text: "agent started"}, {Stream: "chat", Time: at, Text: "Count and note."}}
	var capture []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		capture = append(capture, sc.Text())
		lines = append(lines, store.LogLine{Stream: "stdout", Time: at, Text: sc.Text()})
	}
	if err := st.AppendLogs(ctx, id, lines); err != nil {
		t.Fatal(err)
	}
	return id, capture
}

// TestLogsReadable: `sandbar logs` of a Claude Code session prints what
// a person reads (app/cli/testdata/logs-readable.golden: text, one line
// per tool call, results folded, the turn's end with time and cost),
// with the escapes a tool printed shown as escapes; --json prints the
// stream-json lines as before, escaped; --json --raw the capture's
// bytes.
func TestLogsReadable(t *testing.T) {
	env, _ := testEnv(t)
	var stdout, stderr bytes.Buffer
	env.Stdout, env.Stderr = &stdout, &stderr
	id, capture := claudeLog(t, env)
	ctx := context.Background()

	if err := Run(ctx, env, []string{"logs", id[:6]}); err != nil {
		t.Fatal(err)
	}
	if *updateGolden {
		os.WriteFile("testdata/logs-readable.golden", stdout.Bytes(), 0o644)
	}
	want, err := os.ReadFile("testdata/logs-readable.golden")
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(want) {
		t.Errorf("sandbar logs printed\n%s\nwant (testdata/logs-readable.golden)\n%s", stdout.String(), want)
	}
	for _, w := range []string{"▸ Bash: seq 1 12", "  … 8 more lines", `  \x1b]52;c;cHduZWQ=\x07\x1b[2Jowned`, "✓ Turn done in 18.6 s · $0.3075"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("sandbar logs has no %q", w)
		}
	}
	if strings.ContainsAny(stdout.String()+stderr.String(), "\x1b\x07") || strings.Contains(stdout.String(), `"session_id"`) {
		t.Errorf("sandbar logs printed raw escapes or stream-json:\n%q", stdout.String())
	}
	if stderr.String() != "[system] agent started\n" {
		t.Errorf("sandbar logs printed on stderr %q, want Sandbar's line", stderr.String())
	}

	for _, raw := range []bool{false, true} {
		stdout.Reset()
		stderr.Reset()
		args := []string{"logs", "--json", id}
		if raw {
			args = []string{"logs", "--json", "--raw", id}
		}
		if err := Run(ctx, env, args); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		want.WriteString("> Count and note.\n")
		for _, l := range capture {
			if !raw {
				l = termsafe.Text(l)
			}
			want.WriteString(l + "\n")
		}
		if stdout.String() != want.String() {
			t.Errorf("sandbar %s printed\n%s\nwant the stream as it is\n%s", strings.Join(args, " "), stdout.String(), want.String())
		}
	}
}

// TestStartAndChatWaitReadable: `start --wait` and then `chat --wait`,
// with a stand-in Claude Code that answers each message with the real
// capture, print what a person reads of each turn, as `sandbar logs`
// does (testdata/logs-readable.golden), and return at its end.
func TestStartAndChatWaitReadable(t *testing.T) {
	env := sessiontest.New(t)
	claudeOn(t, env, "")
	// The stand-in answers each message with the capture, copied where
	// the agent's user can read it.
	bin := strings.Split(env.Secrets["PATH"], ":")[0]
	b, err := os.ReadFile("../readable/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(bin, "lines")
	if err := os.WriteFile(capture, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\nwhile read msg; do cat '"+capture+"'; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, cli, stdout, stderr := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := env.Repo(t, "readable")
	env.Give(t, repo, "PATH")
	golden, err := os.ReadFile("testdata/logs-readable.golden")
	if err != nil {
		t.Fatal(err)
	}
	// The prompt's line may come before or after the answer's first
	// lines: it is checked apart.
	agentOnly := func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if !strings.HasPrefix(l, "> ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	}
	want := agentOnly(string(golden))

	o := session.Options{Repo: repo, MemoryMiB: 512, Prompt: "Count and note."}
	if err := startAndWait(ctx, cli, r, o, logPrinter{env: cli, claude: o.Agent.Claude()}); err != nil {
		t.Fatalf("start --wait: %v\nstderr:\n%s", err, stderr)
	}
	if got := agentOnly(stdout.String()); got != want {
		t.Errorf("start --wait printed\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(stdout.String(), "> Count and note.\n") {
		t.Errorf("start --wait does not show the prompt:\n%s", stdout)
	}
	ss, err := r.List(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %v %v", ss, err)
	}

	stdout.Reset()
	stderr.Reset()
	if err := Run(ctx, cli, []string{"chat", "--wait", ss[0].ID[:6], "And again."}); err != nil {
		t.Fatalf("chat --wait: %v\nstderr:\n%s", err, stderr)
	}
	if got := agentOnly(stdout.String()); got != want {
		t.Errorf("chat --wait printed\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(stderr.String(), "the agent's turn ended") {
		t.Errorf("chat --wait does not say the turn ended:\n%s", stderr)
	}
}
