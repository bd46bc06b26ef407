//go:build linux

package tests

import (
	"net"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/tests/anthropictest"
)

// interruptLoop is the Bash call the scripted model makes: five minutes
// of ticks, far longer than the test waits for the interrupt even under
// emulation on a loaded machine.
const interruptLoop = "for i in $(seq 1 300); do echo tick $i; sleep 1; done"

const interruptToolID = "toolu_e2e_loop_1"

// interruptScript: the prompt gets the minute-long Bash call; the
// message after the interrupt ("say hi") gets plain text. It decides by
// content, not by count.
func interruptScript(r *anthropictest.Request) anthropictest.Reply {
	text := func(s string) anthropictest.Reply {
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text(s)}}
	}
	switch {
	case !r.HasTool("Bash"):
		return text("Loop")
	case lastUserSays(r, "say hi"):
		return text("hi")
	case len(r.ToolResults()) > 0:
		return text("The loop ended.")
	default:
		return anthropictest.Reply{Content: []anthropictest.Block{
			anthropictest.Text("Looping for a minute."),
			anthropictest.ToolUse(interruptToolID, "Bash", map[string]string{"command": interruptLoop, "description": "Loop for a minute"}),
		}}
	}
}

// loopRunning reports whether the guest runs the scripted loop, as a
// process's command line shows it.
func loopRunning(t *testing.T, w *world, id string) bool {
	t.Helper()
	out, errOut, code := w.run("", "exec", "--user", "root", id, "--", "sh", "-c",
		// The pattern does not match itself: this sh's and grep's
		// own command lines hold it.
		`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done | grep -c 'seq [1] 300' || true`)
	if code != 0 {
		t.Fatalf("look for the loop in the guest: %s", errOut)
	}
	return strings.TrimSpace(out) != "0"
}

// TestInterruptClaudeCode runs the real Claude Code binary against the
// scripted API: the model starts a minute-long Bash loop, `sandbar
// interrupt` ends the turn (Claude Code's stream-json interrupt request),
// and the session waits for a message with the loop gone and the VM
// running: exec works, and the next message gets a turn of its own,
// whose request carries the loop's call answered as interrupted.
func TestInterruptClaudeCode(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, interruptScript)
	w.env = append(w.env, session.EnvAnthropicUpstream+"=http://"+net.JoinHostPort("127.0.0.1", api.Port))
	if _, errOut, code := w.run("sk-ant-test-interrupt\n", "secrets", "set", "ANTHROPIC_API_KEY"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if _, errOut, code := w.run("1\n", "secrets", "set", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
	id := w.startID("--repo", w.repo, "--prompt", "Loop for a minute.", "--cpus", "2", "--memory", "2048", "--disk", "2")

	// Claude Code says when the Bash tool's process starts (a system
	// task_started line).
	if !waitUntil(8*time.Minute, time.Second, func() bool {
		if s := w.session(id); s.State != "running" && s.State != "provisioning" && s.State != "booting" {
			t.Fatalf("session %s is %s (%s) before the loop ran; the API saw:\n%s", id, s.State, s.Reason, api.Log())
		}
		logs, _, _ := w.run("", "logs", "--json", "--raw", id)
		return strings.Contains(logs, `"task_started"`)
	}) {
		logs, sys, _ := w.run("", "logs", "--raw", id)
		t.Fatalf("the loop never started in the guest; the API saw:\n%s\nlog:\n%s\n%s", api.Log(), logs, sys)
	}
	if !loopRunning(t, w, id) {
		ps, _, _ := w.run("", "exec", "--user", "root", id, "--", "sh", "-c", `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done`)
		t.Fatalf("Claude Code started its Bash tool but no process runs the loop:\n%s", ps)
	}
	if out := w.ok("interrupt", id); !strings.Contains(out, "interrupt sent") {
		t.Errorf("interrupt printed %q", out)
	}
	asked := time.Now()
	var s lsEntry
	if !waitUntil(2*time.Minute, 100*time.Millisecond, func() bool {
		s = w.session(id)
		return s.State == "running" && s.Activity == "waiting"
	}) {
		logs, sys, _ := w.run("", "logs", id)
		t.Fatalf("after the interrupt the session is %s/%s (%s), want running and waiting\n%s\n%s", s.State, s.Activity, s.Reason, logs, sys)
	}
	t.Logf("interrupt to waiting: %.2f s", time.Since(asked).Seconds())
	if s.Reason != session.ReasonInterrupted {
		t.Errorf("after the interrupt the session says %q, want %q", s.Reason, session.ReasonInterrupted)
	}
	if loopRunning(t, w, id) {
		t.Error("the loop still runs after the interrupt")
	}
	if got := w.ok("exec", id, "--", "cat", "README.md"); got != "# test\n" {
		t.Errorf("exec after the interrupt saw %q", got)
	}

	w.ok("chat", id, "say hi")
	s = waitTurn(t, w, id, api)
	if !strings.HasPrefix(s.Reason, "waiting for your message") {
		t.Errorf("after the next turn the session says %q", s.Reason)
	}
	var answered bool
	for _, c := range api.Calls() {
		if c.Messages == nil || !lastUserSays(c.Messages, "say hi") {
			continue
		}
		for _, m := range c.Messages.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" && b.ToolUseID == interruptToolID && b.IsError {
					answered = true
				}
			}
		}
	}
	if !answered {
		t.Errorf("no request after the interrupt carried the loop's call answered as an error; the API saw:\n%s", api.Log())
	}
	w.ok("stop", id)
}

// interruptAgent runs each message as a command; SIGINT it notes and
// reads on (dash's read ends on a trapped signal), as an agent that
// takes Ctrl-C as "stop this" does.
const interruptAgent = `trap 'exit 143' TERM; trap 'intr=1' INT; echo ready
while :; do
	if read -r l; then sh -c "$l"; echo "done: $?"
	elif [ -n "$intr" ]; then intr=
	else break; fi
done`

// TestInterruptPlainAgent: for an agent other than Claude Code, `sandbar
// interrupt` is SIGINT to its process group in the guest: the command it
// runs dies of it (130), the agent reads on, the session waits, and the
// VM runs on.
func TestInterruptPlainAgent(t *testing.T) {
	w := newWorld(t)
	id := w.startID("--repo", w.repo, "--agent", interruptAgent, "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network")
	w.waitState(id, "running")
	waitLog(t, w, id, "ready")
	w.ok("chat", id, "echo tool-running; sleep 4244")
	waitLog(t, w, id, "tool-running")
	// A shell defers SIGINT while it forks: the interrupt waits for the
	// sleep to run, as a person's Ctrl-C would.
	if !waitUntil(2*time.Minute, 200*time.Millisecond, func() bool {
		out, _, _ := w.run("", "exec", "--user", "root", id, "--", "sh", "-c",
			`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done | grep -c '^sleep [4]244 $' || true`)
		return strings.TrimSpace(out) == "1"
	}) {
		t.Fatal("the sleep never ran in the guest")
	}
	w.ok("interrupt", id)
	waitLog(t, w, id, "done: 130")
	if s := w.session(id); s.State != "running" || s.Activity != "waiting" || s.Reason != session.ReasonInterrupted {
		t.Errorf("after the interrupt: %s/%s %q", s.State, s.Activity, s.Reason)
	}
	if got := w.ok("exec", id, "--", "cat", "README.md"); got != "# test\n" {
		t.Errorf("exec after the interrupt saw %q", got)
	}
	w.ok("chat", id, "echo after-interrupt")
	waitLog(t, w, id, "after-interrupt")
	if s := w.session(id); s.Activity != "working" {
		t.Errorf("a message after the interrupt leaves the session %s (%s), want working", s.Activity, s.Reason)
	}
	w.ok("stop", id)
}
