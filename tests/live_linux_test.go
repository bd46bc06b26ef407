//go:build linux

package tests

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/tests/anthropictest"
)

// liveLoop is the Bash call the scripted model makes: a line every half
// second for five seconds.
const liveLoop = "for i in $(seq 1 10); do echo live-$i; sleep 0.5; done"

func liveScript(r *anthropictest.Request) anthropictest.Reply {
	text := func(s string) anthropictest.Reply {
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text(s)}}
	}
	switch {
	case !r.HasTool("Bash"):
		return text("Loop")
	case len(r.ToolResults()) > 0:
		return text("The loop ended.")
	default:
		return anthropictest.Reply{Content: []anthropictest.Block{
			anthropictest.Text("Looping."),
			anthropictest.ToolUse("toolu_e2e_live_1", "Bash", map[string]string{"command": liveLoop, "description": "Print ten lines"}),
		}}
	}
}

// lineLog collects a command's stdout lines as they come.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// TestLiveToolOutput runs the real Claude Code binary against the
// scripted API: its Bash tool prints a line every half second for five
// seconds, and `sandbar logs -f` (readable) shows those lines, marked
// "│", and the tool's elapsed time while it runs — before the tool's
// folded result, which follows them once it ends.
func TestLiveToolOutput(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, liveScript)
	w.env = append(w.env, session.EnvAnthropicUpstream+"=http://"+net.JoinHostPort("127.0.0.1", api.Port))
	if _, errOut, code := w.run("sk-ant-test-live\n", "secrets", "set", "ANTHROPIC_API_KEY"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if _, errOut, code := w.run("1\n", "secrets", "set", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
	id := w.startID("--repo", w.repo, "--prompt", "Print ten lines.", "--cpus", "2", "--memory", "2048", "--disk", "2")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, "logs", "-f", id)
	cmd.Env, cmd.Dir = w.env, w.repo
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got lineLog
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			got.mu.Lock()
			got.lines = append(got.lines, sc.Text())
			got.mu.Unlock()
		}
	}()
	defer func() { cancel(); cmd.Wait(); <-read }()

	// The folded result's first line: the output indented, unmarked.
	result := regexp.MustCompile(`^  live-1$`)
	if !waitUntil(8*time.Minute, 200*time.Millisecond, func() bool {
		if s := w.session(id); s.State != "running" && s.State != "provisioning" && s.State != "booting" {
			t.Fatalf("session %s is %s (%s); the API saw:\n%s", id, s.State, s.Reason, api.Log())
		}
		return slices.ContainsFunc(got.all(), result.MatchString)
	}) {
		t.Fatalf("logs -f never showed the tool's result; it printed:\n%s\nthe API saw:\n%s", strings.Join(got.all(), "\n"), api.Log())
	}
	lines := got.all()
	at := slices.IndexFunc(lines, result.MatchString)
	var live []string
	for _, l := range lines[:at] {
		if strings.HasPrefix(l, "  │ live-") {
			live = append(live, strings.TrimPrefix(l, "  │ "))
		}
	}
	if len(live) < 3 {
		t.Errorf("logs -f showed %d of the tool's lines before its result (%q), want them as they were printed:\n%s", len(live), live, strings.Join(lines, "\n"))
	}
	for i := 1; i < len(live); i++ {
		if live[i] <= live[i-1] && len(live[i]) == len(live[i-1]) {
			t.Errorf("live lines out of order or repeated: %q", live)
		}
	}
	elapsed := regexp.MustCompile(`^⋯ Bash: for i in .* · [0-9.]+ s$`)
	if !slices.ContainsFunc(lines[:at], elapsed.MatchString) {
		t.Errorf("logs -f showed no header with the tool's elapsed time before its result:\n%s", strings.Join(lines, "\n"))
	}
	t.Logf("logs -f:\n%s", strings.Join(lines, "\n"))
	w.ok("stop", id)
}
