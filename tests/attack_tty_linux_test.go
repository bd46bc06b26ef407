//go:build linux

package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// ttyCorpus is what a hostile agent prints, and names its files with, to
// take over the person's terminal: the window title (OSC 0 and 2), the
// clipboard (OSC 52), a cleared screen with a fake prompt (CSI), device
// control and application strings (DCS, APC, PM, SOS), C1 controls as
// code points and as bare bytes, carriage return and backspace that
// overwrite a line, bidirectional overrides and isolates, and bytes that
// are not UTF-8. No line holds a slash, a newline or NUL, so each can be
// a file name.
var ttyCorpus = []string{
	"\x1b]0;PWNED-TITLE\x07",
	"\x1b]2;PWNED-TITLE2\x1b\\",
	"\x1b]52;c;cHduZWQ=\x07",
	"\x1b[2J\x1b[H$ fake prompt",
	"\x1bP+q544e\x1b\\",
	"\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
	"\u009b31mc1-csi\u009d0;c1-osc\u0007",
	"raw-c1-\x9b31m-\x9d",
	"over\rwrite\bback\x7fdel",
	"bidi-\u202eevil\u202c-\u2066iso\u2069-\u200e\u200f\u061c",
	"bad-utf8-\xff\xfe\xc3",
}

// ttyScript commits a file named with each corpus line and leaves
// another uncommitted, prints each line to stdout and stderr, looks each
// up as a host name, says "tty: planted", and waits for /tmp/tty-done;
// then it prints the corpus to stderr once more and exits 3.
const ttyScript = `set -u
n=0
while IFS= read -r l; do
  n=$((n+1))
  printf 'out %s\n' "$l"
  printf 'err %s\n' "$l" >&2
  printf 'x\n' > "c$n-$l"
  printf 'x\n' > "u$n-$l"
  (timeout 5 getent hosts "h$n-$l.example.com" >/dev/null 2>&1 &)
done < tty-corpus
git add c[0-9]* && git commit -qm "files named with the corpus" || { echo "tty: could not plant"; exit 1; }
echo "tty: planted"
while [ ! -e /tmp/tty-done ]; do sleep 0.2; done
while IFS= read -r l; do printf 'last %s\n' "$l" >&2; done < tty-corpus
exit 3
`

// ttyRun is what a command showed on its terminal.
type ttyRun struct {
	name string
	out  string
	code int
}

// onTerminal starts sandbar with stdout and stderr on a new
// pseudo-terminal (the person's terminal; stdin is /dev/null) and
// returns a function that waits for it and returns what the terminal
// received.
func (h *hostileWorld) onTerminal(limit time.Duration, name string, args ...string) func() ttyRun {
	h.t.Helper()
	master, slave := openPTY(h.t)
	setSize(h.t, master, 50, 200)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(h.env, "TERM=xterm-256color")
	cmd.Dir = h.repo
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		cancel()
		h.t.Fatalf("%s: %v", name, err)
	}
	slave.Close()
	var b bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(&b, master) // ends with EIO once every holder of the slave has closed it
	}()
	return func() ttyRun {
		defer cancel()
		err := cmd.Wait()
		<-copied
		master.Close()
		r := ttyRun{name: name, out: b.String()}
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			h.t.Errorf("%s hung: sandbar %q still ran after %v; its terminal shows %q", name, args, limit, clip(r.out))
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil:
			h.t.Errorf("%s: %v", name, err)
		}
		h.t.Logf("%s: sandbar %q exited %d, %d bytes on the terminal", name, args, r.code, len(r.out))
		return r
	}
}

// tty runs sandbar on a pseudo-terminal and checks that nothing a
// terminal would act on reached it.
func (h *hostileWorld) tty(name string, args ...string) ttyRun {
	h.t.Helper()
	r := h.onTerminal(attackStepDeadline, name, args...)()
	h.checkTerminal(r)
	return r
}

// checkTerminal fails the test for each ESC, C1 control (as a code point
// or a bare byte) and bidirectional control in what r's terminal
// received.
func (h *hostileWorld) checkTerminal(r ttyRun) {
	h.t.Helper()
	s := r.out
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		bad := ""
		switch {
		case c == 0x1b:
			bad = "ESC"
		case c >= 0x80 && c < 0xa0:
			bad = "a C1 control"
		case c == utf8.RuneError && size == 1 && s[i] >= 0x80 && s[i] < 0xa0:
			bad = "a bare C1 byte"
		case c == 0x061c, c == 0x200e, c == 0x200f, c >= 0x202a && c <= 0x202e, c >= 0x2066 && c <= 0x2069:
			bad = "a bidirectional control"
		}
		if bad != "" {
			h.t.Errorf("%s put %s on the terminal at byte %d: %q", r.name, bad, i, s[max(0, i-60):min(len(s), i+60)])
			return
		}
		i += size
	}
}

// TestHostileTerminal: what a hostile agent prints, logs and names its
// files with reaches the person's terminal only as visible escapes, in
// every verb that shows it (issue 21, item 3). One session's agent prints
// the corpus to stdout and stderr, commits files named with it and leaves
// more uncommitted, and looks the corpus up as host names; every verb
// then runs on a pseudo-terminal and none may put ESC, a C1 control or a
// bidirectional control on it. `logs --raw` must (the bytes are there,
// as they are, when asked for). The guest's kernel.yama.ptrace_scope is 1
// for the agent user.
func TestHostileTerminal(t *testing.T) {
	h := newHostileWorld(t)
	os.WriteFile(filepath.Join(h.repo, "tty-corpus"), []byte(strings.Join(ttyCorpus, "\n")+"\n"), 0o644)
	h.git("add", "tty-corpus")
	h.commitScript(ttyScript)

	// The agent's whole output as start --wait shows it, live.
	waitStart := h.onTerminal(6*time.Minute, "start --wait", "start", "--repo", h.repo, "--agent", "sh hostile.sh",
		"--prompt", "title "+ttyCorpus[0]+ttyCorpus[9], "--cpus", "1", "--memory", "768", "--disk", "1", "--wait")
	var id string
	if !waitUntil(3*time.Minute, 500*time.Millisecond, func() bool {
		if ss := h.ls(); len(ss) == 1 {
			id = ss[0].ID
		}
		return id != ""
	}) {
		waitStart()
		t.Fatal("start --wait made no session within 3 minutes")
	}
	h.waitPlanted(id, "tty: planted", 4*time.Minute)
	follow := h.onTerminal(4*time.Minute, "logs -f", "logs", "-f", id)

	if out, errOut, code := h.guestSh(id, "cat /proc/sys/kernel/yama/ptrace_scope"); code != 0 || strings.TrimSpace(out) != "1" {
		t.Errorf("kernel.yama.ptrace_scope as the agent user: %q (exit %d, %s), want 1", out, code, errOut)
	}

	logs := h.tty("logs", "logs", id)
	if !strings.Contains(logs.out, `out \x1b]52;c;cHduZWQ=\x07`) || !strings.Contains(logs.out, `err \x1b[2J\x1b[H$ fake prompt`) {
		t.Errorf("logs does not show the agent's lines as escapes:\n%s", clip(logs.out))
	}
	if raw := h.onTerminal(attackStepDeadline, "logs --raw", "logs", "--raw", id)(); !strings.Contains(raw.out, "\x1b]52;c;cHduZWQ=\x07") {
		t.Errorf("logs --raw does not give the agent's bytes as they are:\n%q", clip(raw.out))
	}
	h.tty("logs -n", "logs", "-n", "5", id)
	h.tty("ls", "ls")
	h.tty("ls --json", "ls", "--json")
	h.tty("rename", "rename", id, "renamed "+ttyCorpus[2]+ttyCorpus[9])
	h.tty("ls after rename", "ls")
	changes := h.tty("changes", "changes", id)
	if !strings.Contains(changes.out, `c1-\x1b]0;PWNED-TITLE`) {
		t.Errorf("changes does not list the committed file as escapes:\n%s", clip(changes.out))
	}
	h.tty("changes --json", "changes", "--json", id)
	h.tty("diff", "diff", id, "c4-"+ttyCorpus[3])
	h.tty("diff of no such file", "diff", id, "nothing-"+ttyCorpus[3])
	h.tty("net", "net", id)
	h.tty("net --json", "net", "--json", id)
	h.tty("ports", "ports", id)
	h.tty("chat", "chat", id, "hello "+ttyCorpus[0])
	h.tty("exec cat", "exec", id, "--", "cat", "tty-corpus")
	h.tty("exec to stderr", "exec", id, "--", "sh", "-c", "cat tty-corpus >&2; exit 4")
	h.tty("exec ls", "exec", id, "--", "ls", "-1")
	h.tty("exec of a missing program", "exec", id, "--", "./no-such-"+ttyCorpus[1])
	h.tty("exec in a missing folder", "exec", "--cwd", "/workspace/no-such-"+ttyCorpus[3], id, "--", "true")
	merge := h.tty("merge while running", "merge", id)
	if !strings.Contains(merge.out, `u1-\x1b]0;PWNED-TITLE\x07`) {
		t.Errorf("merge's note does not list the uncommitted files as escapes:\n%s", clip(merge.out))
	}

	// Sync: the person's main names the agent's committed files too, so
	// the merge in the VM stops on them; the conflicts sync prints and
	// asks the agent about are the guest's names, shown as escapes.
	for i, l := range ttyCorpus {
		os.WriteFile(filepath.Join(h.repo, fmt.Sprintf("c%d-%s", i+1, l)), []byte("person\n"), 0o644)
	}
	h.git("add", "-A")
	h.git("commit", "-qm", "the person's files of the same names")
	h.tty("sync", "sync", id)
	conflict := h.tty("sync --merge over hostile names", "sync", id, "--merge")
	if conflict.code != 1 || !strings.Contains(conflict.out, `c4-\x1b[2J\x1b[H$ fake prompt`) || !strings.Contains(conflict.out, fmt.Sprintf("stopped on conflicts in %d files", len(ttyCorpus))) {
		t.Errorf("sync --merge exited %d, want 1, listing the conflicting files as escapes:\n%s", conflict.code, clip(conflict.out))
	}
	h.tty("sync --ask over hostile names", "sync", id, "--ask")
	if _, errOut, code := h.guestSh(id, "git merge --abort"); code != 0 {
		t.Errorf("git merge --abort in the VM: %s", errOut)
	}

	// The agent's last words, on stderr, then its exit.
	if _, errOut, code := h.guestSh(id, "touch /tmp/tty-done"); code != 0 {
		t.Fatalf("could not tell the agent to finish: %s", errOut)
	}
	start := waitStart()
	h.checkTerminal(start)
	if start.code != 3 || !strings.Contains(start.out, `last \x1b]2;PWNED-TITLE2\x1b\`) {
		t.Errorf("start --wait exited %d, want the agent's 3, having shown its lines as escapes:\n%s", start.code, clip(start.out))
	}
	h.checkTerminal(follow())
	// An agent that exits 3 leaves its session failed.
	var st lsEntry
	if !waitUntil(3*time.Minute, 500*time.Millisecond, func() bool {
		st = h.session(id)
		return st.State == "stopped" || st.State == "failed"
	}) {
		t.Fatalf("session %s is %s (%s) 3 minutes after its agent exited", id, st.State, st.Reason)
	}

	h.tty("ls when stopped", "ls")
	h.tty("changes when stopped", "changes", id)
	h.tty("merge when stopped", "merge", id)
	h.tty("stop when stopped", "stop", id)
	h.tty("rm", "rm", "--force", id)
	h.tty("trash ls", "trash", "ls")
	h.tty("trash ls --json", "trash", "ls", "--json")
	h.tty("logs from the trash", "logs", id)
	h.checkMarkers("at the end")
	if t.Failed() {
		h.logEngineWarnings()
	}
}
