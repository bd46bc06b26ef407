//go:build linux

package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/tests/anthropictest"
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
	case lastUserSays(r, claudeChat):
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text(claudeChatAnswer)}}
	case len(r.ToolResults()) > 0:
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text("Committed hello.txt.")}}
	default:
		return anthropictest.Reply{Content: []anthropictest.Block{
			anthropictest.Text("I'll add the file and commit it."),
			anthropictest.ToolUse(claudeToolID, "Bash", map[string]string{"command": claudeCommand, "description": "Write hello.txt and commit it"}),
		}}
	}
}

// claudeChat is the message `chat --wait` sends after the first turn;
// the scripted model answers it with claudeChatAnswer, no tool call.
const (
	claudeChat       = "Say what you did."
	claudeChatAnswer = "I added hello.txt and committed it."
)

// lastUserSays reports whether the request's last message is the
// person's and holds text.
func lastUserSays(r *anthropictest.Request, text string) bool {
	last, ok := r.LastTurn()
	if !ok || last.Role != "user" {
		return false
	}
	for _, b := range last.Content {
		if b.Type == "text" && strings.Contains(b.Text, text) {
			return true
		}
	}
	return false
}

// TestClaudeCodeCommitsAndMerges runs the real Claude Code binary in a
// session VM against a scripted Messages API on the host's loopback,
// reached through Sandbar's model-API broker (SANDBAR_ANTHROPIC_UPSTREAM
// points the broker there): the model calls Bash to edit and commit, the
// turn ends with the session waiting for a message, and merge brings the
// commit home as branch sandbar/<id> without touching the person's
// working tree, index or HEAD. The API sees the real key on every
// request; the guest never holds it: not in any process's environment,
// not on its disks, not in its RAM (dumped through QMP and searched).
func TestClaudeCodeCommitsAndMerges(t *testing.T) {
	w := newWorld(t)
	api := anthropictest.Start(t, claudeScript)
	const key = "sk-ant-test-e2e-0123456789abcdef"
	w.env = append(w.env,
		session.EnvAnthropicUpstream+"=http://"+net.JoinHostPort("127.0.0.1", api.Port),
		// No update checks, telemetry or error reports: only the scripted
		// API is asked anything.
	)
	if _, errOut, code := w.run(key+"\n", "secrets", "set", "ANTHROPIC_API_KEY"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	if _, errOut, code := w.run("1\n", "secrets", "set", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
	head := w.git("rev-parse", "HEAD")
	before := treeState(t, w)

	started := time.Now()
	id := w.startID("--repo", w.repo, "--prompt", "Add hello.txt and commit it.", "--cpus", "2", "--memory", "2048", "--disk", "2")
	s := waitTurn(t, w, id, api)
	t.Logf("start to the turn's end: %.1f s; the API saw:\n%s", time.Since(started).Seconds(), api.Log())
	if !strings.HasPrefix(s.Reason, "waiting for your message") {
		t.Errorf("after the turn the session says %q", s.Reason)
	}

	// The guest holds a sentinel, never the key: in no process's
	// environment (a leaked key would show, redacted, in exec's output),
	// on no disk of the session, in none of its RAM.
	environ, errOut, code := w.run("", "exec", "--user", "root", id, "--", "sh", "-c", `for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; done 2>/dev/null`)
	if code != 0 {
		t.Fatalf("read the guest's environments: %s", errOut)
	}
	if strings.Contains(environ, key) || strings.Contains(environ, "redacted:ANTHROPIC_API_KEY") {
		t.Error("the API key is in a process environment in the guest")
	}
	if !strings.Contains(environ, "ANTHROPIC_API_KEY=sandbar-brokered-") || !strings.Contains(environ, "ANTHROPIC_BASE_URL="+session.BrokerURL) {
		t.Errorf("the agent's environment has no sentinel key and broker URL:\n%s", clip(environ))
	}
	dump := filepath.Join(t.TempDir(), "guest-memory.elf")
	qmpDumpMemory(t, filepath.Join(w.home, "sessions", id), dump)
	files := []string{dump, filepath.Join(w.home, "sessions", id, "scratch.img")}
	bases, _ := filepath.Glob(filepath.Join(w.home, "projects", "*", "bases", "*.ext4"))
	for _, f := range append(files, bases...) {
		if n, err := countInFile(f, []byte(key)); err != nil || n > 0 {
			t.Errorf("%s holds the API key %d times (%v)", filepath.Base(f), n, err)
		}
	}
	if n, _ := countInFile(dump, []byte("sandbar-brokered-")); n == 0 {
		t.Error("the memory dump holds no sentinel either: did it dump the guest's RAM?")
	}

	// `sandbar logs` on a terminal reads as the turn went: the text, the
	// call on one line, its result, the turn's end; --json is the stream.
	h := &hostileWorld{world: w, t: t}
	readable := h.tty("logs on a terminal", "logs", id)
	for _, want := range []string{"I'll add the file and commit it.", "▸ Bash: " + claudeCommand, "  committed: add hello", "Committed hello.txt.", "✓ Turn done in "} {
		if !strings.Contains(readable.out, want) {
			t.Errorf("`sandbar logs` on a terminal has no %q:\n%s", want, readable.out)
		}
	}
	if strings.Contains(readable.out, `"session_id"`) {
		t.Errorf("`sandbar logs` on a terminal shows stream-json:\n%s", readable.out)
	}
	// chat --wait shows the answer and returns when the turn ends.
	answer := h.onTerminal(4*time.Minute, "chat --wait", "chat", "--wait", id, claudeChat)()
	h.checkTerminal(answer)
	if answer.code != 0 || !strings.Contains(answer.out, claudeChatAnswer) || !strings.Contains(answer.out, "✓ Turn done in ") ||
		strings.Contains(answer.out, `"session_id"`) {
		t.Errorf("chat --wait exited %d and showed:\n%s", answer.code, answer.out)
	}
	if s := w.session(id); s.State != "running" || s.Activity != "waiting" {
		t.Errorf("after chat --wait the session is %s/%s (%s), want running and waiting", s.State, s.Activity, s.Reason)
	}

	logs, sys, _ := w.run("", "logs", "--json", id)
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
	var s lsEntry
	fail := func() {
		logs, sys, _ := w.run("", "logs", id)
		t.Fatalf("session %s is %s/%s (%s), want running and waiting for a message\nthe API saw:\n%s\nlog:\n%s\n%s", id, s.State, s.Activity, s.Reason, api.Log(), logs, sys)
	}
	if !waitUntil(8*time.Minute, time.Second, func() bool {
		s = w.session(id)
		if s.State == "running" && s.Activity == "waiting" {
			return true
		}
		if s.State != "running" && s.State != "provisioning" && s.State != "booting" {
			fail()
		}
		return false
	}) {
		fail()
	}
	return s
}

// qmpDumpMemory writes the RAM of the VM whose directory is dir to path
// (an ELF core) through its QMP monitor, found in its QEMU's command
// line.
func qmpDumpMemory(t *testing.T, dir, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "vm.pid"))
	if err != nil {
		t.Fatalf("the VM's pid file: %v", err)
	}
	var pid int
	fmt.Sscan(string(b), &pid) // "PID START"
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("QEMU's command line: %v", err)
	}
	sock := ""
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if strings.HasPrefix(a, "socket,id=qmp,path=") {
			sock = strings.ReplaceAll(strings.SplitN(strings.TrimPrefix(a, "socket,id=qmp,path="), ",server", 2)[0], ",,", ",")
		}
	}
	if sock == "" {
		t.Fatalf("no QMP socket in QEMU's command line %q", cmdline)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	r := bufio.NewReader(c)
	r.ReadBytes('\n') // greeting
	enc := json.NewEncoder(c)
	for _, cmd := range []map[string]any{
		{"execute": "qmp_capabilities"},
		{"execute": "dump-guest-memory", "arguments": map[string]any{"paging": false, "protocol": "file:" + path}},
	} {
		enc.Encode(cmd)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("QMP %v: %v", cmd["execute"], err)
			}
			var rep struct {
				Return json.RawMessage
				Error  *struct{ Desc string }
			}
			json.Unmarshal(line, &rep)
			if rep.Error != nil {
				t.Fatalf("QMP %v: %s", cmd["execute"], rep.Error.Desc)
			}
			if rep.Return != nil {
				break
			}
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < 256<<20 {
		t.Fatalf("the memory dump: %v, %d bytes", err, fi.Size())
	}
}

// countInFile counts the occurrences of needle in a file, read in chunks
// that overlap by len(needle)-1 bytes.
func countInFile(path string, needle []byte) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 8<<20)
	keep, n := 0, 0
	for {
		k, err := f.Read(buf[keep:])
		chunk := buf[:keep+k]
		n += bytes.Count(chunk, needle)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		keep = min(len(needle)-1, len(chunk))
		// Occurrences inside the kept tail were counted; move it so only
		// ones that cross the boundary are new.
		tail := chunk[len(chunk)-keep:]
		n -= bytes.Count(tail, needle)
		copy(buf, tail)
	}
}
