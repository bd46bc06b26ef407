//go:build linux

package tests

import (
	"net"
	"strings"
	"testing"
	"time"

	"sandbar/tests/anthropictest"
	"sandbar/vm/qemu"
)

// claudeCommand is what the scripted model asks Claude Code's Bash tool to
// run: an edit and a commit, then a line that proves the commit exists in
// the VM's clone (the tool result carries it back to the API).
const claudeCommand = "echo hello > hello.txt && git add hello.txt && git commit -qm 'add hello' && git log -1 --format='committed: %s'"

const claudeToolID = "toolu_e2e_bash_1"

// claudeScript answers the session's conversation: a Bash call to the
// prompt, plain text once the call's result comes back. Requests without
// the Bash tool (titles, summaries Claude Code may ask for) get plain
// text. It decides by content, not by count.
func claudeScript(r *anthropictest.Request) anthropictest.Reply {
	switch {
	case !r.HasTool("Bash"):
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text("Add hello.txt")}}
	case len(r.ToolResults()) > 0:
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text("Committed hello.txt.")}}
	default:
		return anthropictest.Reply{Content: []anthropictest.Block{
			anthropictest.Text("I'll add the file and commit it."),
			anthropictest.ToolUse(claudeToolID, "Bash", map[string]string{"command": claudeCommand, "description": "Write hello.txt and commit it"}),
		}}
	}
}

// guestHostAddr is the host's loopback as a session VM reaches it: the
// gateway of QEMU's user-mode network (vm/qemu's GuestNet), which slirp
// forwards to 127.0.0.1 on the host.
func guestHostAddr(t *testing.T) string {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(qemu.GuestNet, "static:"), ",")
	if len(parts) != 3 || net.ParseIP(parts[1]) == nil {
		t.Fatalf("qemu.GuestNet = %q: want static:<ip>/<prefix>,<gateway>,<dns>", qemu.GuestNet)
	}
	return parts[1]
}

// TestClaudeCodeCommitsAndMerges runs the real Claude Code binary in a
// session VM against a scripted Messages API on the host's loopback: the
// model calls Bash to edit and commit, the turn ends with the session
// waiting for a message, and merge brings the commit home as branch
// sandbar/<id> without touching the person's working tree, index or HEAD.
func TestClaudeCodeCommitsAndMerges(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, claudeScript)
	const key = "sk-ant-test-e2e-0123456789abcdef"
	for name, value := range map[string]string{
		"ANTHROPIC_API_KEY":  key,
		"ANTHROPIC_BASE_URL": "http://" + net.JoinHostPort(guestHostAddr(t), api.Port),
		// No update checks, telemetry or error reports: only the scripted
		// API is asked anything.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	} {
		if _, errOut, code := w.run(value+"\n", "secrets", "set", name); code != 0 {
			t.Fatalf("secrets set %s: %s", name, errOut)
		}
	}
	head := w.git("rev-parse", "HEAD")
	before := treeState(t, w)

	started := time.Now()
	id := w.startID("--repo", w.repo, "--prompt", "Add hello.txt and commit it.", "--cpus", "2", "--memory", "2048", "--disk", "2")
	s := waitTurn(t, w, id, api)
	t.Logf("start to the turn's end: %.1f s; the API saw:\n%s", time.Since(started).Seconds(), api.Log())
	if !strings.HasPrefix(s.Reason, "waiting for your message") {
		t.Errorf("after the turn the session says %q", s.Reason)
	}

	logs, sys, _ := w.run("", "logs", id)
	for _, want := range []string{
		`"type":"tool_use","id":"` + claudeToolID + `","name":"Bash"`, // the model's call, as Claude Code ran it
		`"tool_use_id":"` + claudeToolID + `"`,                        // its result
		"committed: add hello",
		`"subtype":"success"`, // the turn's result
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the session's log has no %s:\n%s\n%s", want, logs, sys)
		}
	}
	if strings.Contains(logs+sys, key) {
		t.Error("the API key appears in the session's log")
	}

	// The API saw the key and, after the call, its result.
	var result *anthropictest.ToolResult
	for _, c := range api.Calls() {
		if got := c.Header.Get("X-Api-Key"); got != key {
			t.Errorf("%s came with key %q, want the secret's value", c, got)
		}
		if c.Messages == nil {
			continue
		}
		for _, r := range c.Messages.ToolResults() {
			if r.ToolUseID == claudeToolID {
				result = &r
			}
		}
	}
	switch {
	case result == nil:
		t.Errorf("no request carried the tool_result of %s; the API saw:\n%s", claudeToolID, api.Log())
	case result.IsError || strings.TrimSpace(result.Text) != "committed: add hello":
		t.Errorf("the Bash call's result: error %t, %q; want \"committed: add hello\"", result.IsError, result.Text)
	}

	w.ok("stop", id)
	if s := w.session(id); s.State != "stopped" {
		t.Errorf("after stop: %+v", s)
	}
	if out := w.ok("merge", id); !strings.Contains(out, "branch sandbar/"+id+" created at ") {
		t.Errorf("merge says %q", out)
	}
	branch := "sandbar/" + id
	if got := w.git("log", "--format=%s", head+".."+branch); got != "add hello" {
		t.Errorf("%s has %q beyond the start, want the one commit 'add hello'", branch, got)
	}
	if got := w.git("diff", "--name-status", head, branch); got != "A\thello.txt" {
		t.Errorf("%s changes %q, want A hello.txt", branch, got)
	}
	if got := w.git("show", branch+":hello.txt"); got != "hello" {
		t.Errorf("hello.txt on %s holds %q", branch, got)
	}
	if after := treeState(t, w); after != before {
		t.Errorf("the repository's working tree, index or HEAD changed:\nbefore %s\nafter  %s", before, after)
	}
}

// waitTurn waits until the session's agent has ended its turn and waits
// for a message. Claude Code under software emulation takes a while to
// start; a session that fails or stops first ends the wait at once.
func waitTurn(t *testing.T, w *world, id string, api *anthropictest.Server) lsEntry {
	t.Helper()
	deadline := time.Now().Add(8 * time.Minute)
	for {
		s := w.session(id)
		if s.State == "running" && s.Activity == "waiting" {
			return s
		}
		if s.State != "running" && s.State != "provisioning" && s.State != "booting" || time.Now().After(deadline) {
			logs, sys, _ := w.run("", "logs", id)
			t.Fatalf("session %s is %s/%s (%s), want running and waiting for a message\nthe API saw:\n%s\nlog:\n%s\n%s", id, s.State, s.Activity, s.Reason, api.Log(), logs, sys)
		}
		time.Sleep(time.Second)
	}
}
