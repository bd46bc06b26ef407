package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/engine"
	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	"sandbar/guest/image"
)

// fakeClaude stands in for Claude Code: it speaks stream-json, answers
// each message it reads with one turn whose result line is RESULT, and
// keeps reading, as Claude Code does between turns.
const fakeClaude = `#!/bin/sh
echo '{"type":"system","subtype":"init","model":"claude-test"}'
while read line; do
  echo '{"type":"assistant","message":{"content":[{"type":"text","text":"Looked."}]}}'
  echo 'RESULT'
done
`

// engineFor serves env's Manager as the engine of its data directory, as
// `sandbar serve` would, and returns a client of it over the socket (as
// main wires one: a Manager of its own over the same store, which runs
// nothing, for the reads), and a CLI Env on the same data directory.
func engineFor(t *testing.T, env *sessiontest.Env) (session.Service, *Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	e, err := engine.Listen(context.Background(), env.Paths, env.Manager, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-served
		e.Close()
	})
	img := &image.Image{Dir: t.TempDir()}
	local, err := session.New(ctx, session.Config{
		Paths: env.Paths, Store: env.Store, Hypervisor: env.Hypervisor,
		Image:      func(context.Context) (*image.Image, error) { return img, nil },
		HostMemory: 16 << 30, HostCPUs: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close(context.Background()) })
	paths := env.Paths
	c := &engine.Client{Local: local, Engine: func(ctx context.Context) (*engine.Remote, error) { return engine.Dial(ctx, paths) }}
	var stdout, stderr bytes.Buffer
	return c, &Env{Paths: env.Paths, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Logger: slog.New(slog.DiscardHandler), Version: "test",
		Store:    func() (*store.Store, error) { return env.Store, nil },
		Sessions: func(context.Context) (session.Service, error) { return c, nil },
	}, &stdout, &stderr
}

// claudeOn puts fakeClaude on the agent's PATH with result as its turns'
// result line.
func claudeOn(t *testing.T, env *sessiontest.Env, result string) {
	t.Helper()
	bin := t.TempDir()
	for d := bin; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the agent may run as another user
	}
	script := strings.Replace(fakeClaude, "RESULT", result, 1)
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env.Secrets["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
}

// TestStartWaitReturnsWhenClaudesTurnEnds: `sandbar start --wait` with
// Claude Code returns when the agent's first turn ends, through the
// engine's socket, with 0 for a successful result and 1 for an error
// result, and the session stays running, waiting for a message.
func TestStartWaitReturnsWhenClaudesTurnEnds(t *testing.T) {
	for _, tt := range []struct {
		name, result string
		code         int
		words        string // what a failed turn's reason says
	}{
		{"success", `{"type":"result","subtype":"success","is_error":false,"result":"all done","duration_ms":1500,"num_turns":2,"total_cost_usd":0.0125}`, 0, ""},
		{"is_error", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","num_turns":1,"api_error_status":500,"api_error_type":"api_error"}`, 1, "the anthropic api failed (http 500)"},
		{"error subtype", `{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":9}`, 1, "limit of turns"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := sessiontest.New(t)
			claudeOn(t, env, tt.result)
			r, cli, stdout, stderr := engineFor(t, env)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			repo := env.Repo(t, "waiting répo")
			env.Give(t, repo, "PATH") // the stand-in claude comes first
			o := session.Options{Repo: repo, MemoryMiB: 512, Prompt: "What is here?"}
			done := make(chan error, 1)
			go func() { done <- startAndWait(ctx, cli, r, o, logPrinter{env: cli, claude: true, json: true}) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cancel()
				<-done
				t.Fatalf("start --wait did not return within 30 s of the start; stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			code := 0
			var exit ExitError
			if errors.As(err, &exit) {
				code = exit.Code
			} else if err != nil {
				t.Fatalf("start --wait: %v", err)
			}
			if code != tt.code {
				t.Errorf("start --wait exited %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stdout.String(), `"type":"result"`) {
				t.Errorf("the turn's output was not all shown before returning; stdout:\n%s", stdout)
			}
			if tt.code != 0 {
				// A turn that ends with an error fails the session, with
				// its reason in words.
				if !strings.Contains(stderr.String(), "sandbar restart") || !strings.Contains(strings.ToLower(stderr.String()), tt.words) {
					t.Errorf("stderr does not say the turn failed (%q) and how to go on:\n%s", tt.words, stderr)
				}
				ss, err := env.Manager.List(ctx)
				if err != nil || len(ss) != 1 {
					t.Fatalf("sessions: %v, %v", ss, err)
				}
				s, err := env.Manager.Wait(ctx, ss[0].ID)
				if err != nil || s.State != session.StateFailed || !strings.Contains(strings.ToLower(s.Reason), tt.words) {
					t.Errorf("after a failed turn the session is %s (%q, %v); want failed, saying %q", s.State, s.Reason, err, tt.words)
				}
				return
			}
			if !strings.Contains(stderr.String(), "sandbar chat") {
				t.Errorf("stderr does not say how to go on with the session:\n%s", stderr)
			}
			ss, err := env.Manager.List(ctx)
			if err != nil || len(ss) != 1 {
				t.Fatalf("sessions: %v, %v", ss, err)
			}
			if s := ss[0]; s.State != session.StateRunning || s.Activity != session.ActivityWaiting {
				t.Errorf("after start --wait the session is %s/%s (%s); want it running, waiting for a message", s.State, s.Activity, s.Reason)
			}
		})
	}
}

// TestStartWaitCustomAgentWaitsForExit: a custom agent is waited for
// until it exits, and its exit code is --wait's, even if it prints what
// looks like a Claude Code result first.
func TestStartWaitCustomAgentWaitsForExit(t *testing.T) {
	env := sessiontest.New(t)
	r, cli, _, stderr := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := session.Options{Repo: env.Repo(t, "custom"), MemoryMiB: 512,
		Agent: sessiontest.Shell(`echo '{"type":"result","subtype":"success","is_error":false}'; read line; exit 3`), Prompt: "go"}
	err := startAndWait(ctx, cli, r, o, logPrinter{env: cli})
	var exit ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Errorf("start --wait with a custom agent that exits 3: %v; stderr:\n%s", err, stderr)
	}
}

// TestStartWaitClaudeNeedsAPrompt: without a first message Claude Code
// has no turn to end, so --wait without --prompt is refused at once.
func TestStartWaitClaudeNeedsAPrompt(t *testing.T) {
	env, _ := testEnv(t)
	err := Run(context.Background(), env, []string{"start", "--wait"})
	var usage UsageError
	if !errors.As(err, &usage) || !strings.Contains(usage.Msg, "--prompt") {
		t.Errorf("start --wait without a prompt: %v; want a usage error asking for --prompt", err)
	}
}
