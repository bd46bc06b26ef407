//go:build linux

package tests

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/tests/anthropictest"
)

// syncAgentCommand is the Bash call the scripted model makes: the agent
// changes README.md in a commit of its own.
const syncAgentCommand = `printf '# agent\n' > README.md && git commit -qam "agent's readme"`

// syncResolveSays is what the prepared message names when a merge
// stopped on README.md alone.
const syncResolveSays = "stopped on conflicts in 1 file: `README.md`"

// syncScript: the prompt gets the Bash call; the message asking to
// resolve the conflict gets plain text. It decides by content.
func syncScript(r *anthropictest.Request) anthropictest.Reply {
	text := func(s string) anthropictest.Reply {
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text(s)}}
	}
	switch {
	case !r.HasTool("Bash"):
		return text("Sync")
	case lastUserSays(r, syncResolveSays):
		return text("I will resolve README.md.")
	case len(r.ToolResults()) > 0:
		return text("Committed the readme.")
	default:
		return anthropictest.Reply{Content: []anthropictest.Block{
			anthropictest.Text("I'll change the readme and commit it."),
			anthropictest.ToolUse("toolu_e2e_sync_1", "Bash", map[string]string{"command": syncAgentCommand, "description": "Change the readme and commit it"}),
		}}
	}
}

// TestSyncWithYourBranch runs the real Claude Code binary against the
// scripted API. The agent commits a change to README.md; the person
// commits a new file on main; `sandbar sync` brings main into the VM's
// clone as origin/main (git branch -a lists it, at the person's commit),
// and `sync --merge` makes the merge commit there. Then the person
// changes README.md too: `sync --merge` stops on the conflict and names
// the file and the commands to continue, and `sync --ask` sends the
// agent the prepared message, which the scripted API receives naming
// README.md.
func TestSyncWithYourBranch(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, syncScript)
	w.env = append(w.env, session.EnvAnthropicUpstream+"=http://"+net.JoinHostPort("127.0.0.1", api.Port))
	if _, errOut, code := w.run("sk-ant-test-sync\n", "secrets", "set", "ANTHROPIC_API_KEY"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if _, errOut, code := w.run("1\n", "secrets", "set", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
	id := w.startID("--repo", w.repo, "--prompt", "Change the readme and commit it.", "--cpus", "2", "--memory", "2048", "--disk", "2")
	waitTurn(t, w, id, api)
	if got := w.ok("exec", id, "--", "git", "log", "-1", "--format=%s"); got != "agent's readme\n" {
		t.Fatalf("the agent's last commit is %q; the API saw:\n%s", got, api.Log())
	}

	// The person's main moves on: a file of their own.
	os.WriteFile(filepath.Join(w.repo, "person.txt"), []byte("person\n"), 0o644)
	w.git("add", "person.txt")
	w.git("commit", "-qm", "person's file")
	mine := w.git("rev-parse", "HEAD")
	if br := w.ok("exec", id, "--", "git", "branch", "-a"); strings.Contains(br, "origin/main") {
		t.Fatalf("the clone lists origin/main before any sync:\n%s", br)
	}
	out := w.ok("sync", id)
	for _, want := range []string{"origin/main is your main at " + mine[:7], "1 commit the session's branch lacks", "sandbar sync " + id + " --merge"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync printed %q, want %q in it", out, want)
		}
	}
	if br := w.ok("exec", id, "--", "git", "branch", "-a"); !strings.Contains(br, "remotes/origin/main") {
		t.Errorf("git branch -a in the VM after sync:\n%s", br)
	}
	if got := strings.TrimSpace(w.ok("exec", id, "--", "git", "rev-parse", "origin/main")); got != mine {
		t.Errorf("origin/main in the VM is %s, want the person's %s", got, mine)
	}

	out = w.ok("sync", id, "--merge")
	if !strings.Contains(out, "Merged origin/main into the session's branch") {
		t.Errorf("sync --merge printed %q", out)
	}
	parents := strings.Fields(w.ok("exec", id, "--", "git", "log", "-1", "--format=%P"))
	if len(parents) != 2 || parents[1] != mine {
		t.Errorf("the clone's HEAD has parents %v, want the agent's commit and %s", parents, mine)
	}
	if got := w.ok("exec", id, "--", "cat", "person.txt"); got != "person\n" {
		t.Errorf("person.txt in the clone after the merge: %q", got)
	}

	// Now both change README.md.
	os.WriteFile(filepath.Join(w.repo, "README.md"), []byte("# person\n"), 0o644)
	w.git("commit", "-qam", "person's readme")
	out, errOut, code := w.run("", "sync", id, "--merge")
	if code != 1 {
		t.Errorf("sync --merge over a conflict exited %d, want 1 (stderr %s)", code, errOut)
	}
	for _, want := range []string{"The merge of origin/main stopped on conflicts in 1 file:\n  README.md\n", "sandbar sync " + id + " --ask", "git merge --abort"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync --merge over a conflict printed %q, want %q in it", out, want)
		}
	}
	if st := w.ok("exec", id, "--", "git", "status", "--porcelain"); !strings.Contains(st, "UU README.md") {
		t.Errorf("the clone's status after the conflict:\n%s", st)
	}

	out = w.ok("sync", id, "--ask")
	if !strings.Contains(out, "Asked the agent to resolve the conflicts of the merge in 1 file: README.md") {
		t.Errorf("sync --ask printed %q", out)
	}
	if !waitUntil(4*time.Minute, time.Second, func() bool {
		for _, c := range api.Calls() {
			if c.Messages != nil && lastUserSays(c.Messages, syncResolveSays) {
				return true
			}
		}
		return false
	}) {
		logs, sys, _ := w.run("", "logs", id)
		t.Fatalf("the scripted API never got the message naming README.md; it saw:\n%s\nlog:\n%s\n%s", api.Log(), logs, sys)
	}
	w.ok("stop", id)
}
