package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
)

// TestAgentBytesEscaped: what the agent prints reaches `start --wait`'s
// and `logs`' output as escapes, and as it is with --raw.
func TestAgentBytesEscaped(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, stdout, stderr := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := session.Options{Repo: env.Repo(t, "escapes"), MemoryMiB: 512, Prompt: "go",
		Agent: sessiontest.Shell(`printf 'title \033]0;pwned\007 clip \033]52;c;eA==\007 \342\200\256evil\n'; printf 'err \302\233 2J\n' >&2`)}
	if err := startAndWait(ctx, cli, r, o, logPrinter{env: cli}); err != nil {
		t.Fatalf("start --wait: %v; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stdout.String(), `title \x1b]0;pwned\x07 clip \x1b]52;c;eA==\x07 \u202eevil`) ||
		!strings.Contains(stderr.String(), `err \x9b 2J`) || strings.ContainsAny(stdout.String()+stderr.String(), "\x1b\u202e") {
		t.Errorf("start --wait did not show the agent's bytes as escapes:\nstdout %q\nstderr %q", stdout, stderr)
	}
	ss, err := r.List(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %v %v", ss, err)
	}
	for _, raw := range []bool{false, true} {
		stdout.Reset()
		stderr.Reset()
		args := []string{"logs", ss[0].ID}
		if raw {
			args = []string{"logs", "--raw", ss[0].ID}
		}
		if err := Run(ctx, cli, args); err != nil {
			t.Fatal(err)
		}
		escaped := strings.Contains(stdout.String(), `title \x1b]0;pwned\x07`) && !strings.ContainsRune(stdout.String()+stderr.String(), 0x1b)
		asIs := strings.Contains(stdout.String(), "title \x1b]0;pwned\x07 clip \x1b]52;c;eA==\x07 \u202eevil")
		if raw && !asIs || !raw && !escaped {
			t.Errorf("sandbar %s:\nstdout %q\nstderr %q", strings.Join(args, " "), stdout, stderr)
		}
	}
}
