package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// echoAgent says hello, then answers every line it reads.
const echoAgent = `echo hello-from-agent; echo warming-up >&2; while read l; do echo "got: $l"; done`

func TestSessionWindowLiveLogAndChat(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)

	h.q.WaitFor(t, 30*time.Second, "the agent's first line in the log view", func() bool {
		t.Logf("state %q lines %q", w.state.Text, w.logs.Lines())
		return logHas(w.logs, "hello-from-agent")
	})
	h.q.WaitFor(t, 30*time.Second, "the header saying the agent works", func() bool {
		return strings.HasPrefix(w.state.Text, "Working") && !w.chat.Disabled()
	})
	if w.stop.Disabled() || !w.restart.Disabled() {
		t.Errorf("running: Stop enabled %v, Restart disabled %v", !w.stop.Disabled(), w.restart.Disabled())
	}
	if !strings.Contains(w.where.Text, "demo") || !strings.Contains(w.where.Text, s.Branch) {
		t.Errorf("header %q does not name the project and branch %s", w.where.Text, s.Branch)
	}
	if w.tabs.Selected().Text != tabLog {
		t.Errorf("a custom agent's window opens on %q, want the Log", w.tabs.Selected().Text)
	}

	test.Type(w.chat, "ping from the window")
	pressEnter(w.chat)
	if w.chat.Text != "" {
		t.Errorf("chat entry keeps %q after sending", w.chat.Text)
	}
	h.q.WaitFor(t, 30*time.Second, "the agent's reply to the chat", func() bool { return logHas(w.logs, "got: ping from the window") })
	if w.chatNote.Visible() {
		t.Errorf("chat note shown after a good send: %q", w.chatNote.Text)
	}
}

func TestSessionWindowExecConsole(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the exec console to open", func() bool { return !w.exec.run.Disabled() })

	test.Type(w.exec.entry, "echo exec-out; echo exec-err >&2; pwd")
	test.Tap(w.exec.run)
	h.q.WaitFor(t, 30*time.Second, "the command's output and exit", func() bool {
		return hasLine(w.exec.out, "exec-out") && hasLine(w.exec.out, "exec-err") && strings.HasPrefix(w.exec.status.Text, "Done in ")
	})
	var errStream bool
	for _, l := range w.exec.out.Held() {
		if l.Text == "exec-err" {
			errStream = l.Stream == "stderr"
		}
	}
	if !errStream {
		t.Error("stderr output is not shown as stderr")
	}

	// A long command is cancelled with Cancel.
	test.Type(w.exec.entry, "echo started; sleep 60")
	pressEnter(w.exec.entry)
	h.q.WaitFor(t, 30*time.Second, "the long command to start", func() bool { return hasLine(w.exec.out, "started") })
	if w.exec.stop.Disabled() {
		t.Fatal("Cancel is disabled while a command runs")
	}
	test.Tap(w.exec.stop)
	h.q.WaitFor(t, 30*time.Second, "the command to be cancelled", func() bool { return strings.HasPrefix(w.exec.status.Text, "Cancelled") })
	if !w.exec.stop.Disabled() || w.exec.run.Disabled() {
		t.Error("after cancelling, Cancel should be disabled and Run enabled")
	}
}

func TestSessionWindowStop(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the session to run", func() bool { return !w.stop.Disabled() && strings.HasPrefix(w.state.Text, "Working") })

	test.Tap(w.stop)
	h.q.WaitFor(t, 30*time.Second, "the header to say stopped, and Restart offered", func() bool {
		return strings.HasPrefix(w.state.Text, "Stopped") && !w.restart.Disabled()
	})
	if !w.stop.Disabled() {
		t.Error("stopped: Stop still enabled")
	}
	if !w.chat.Disabled() || !w.chatNote.Visible() || !strings.Contains(w.chatNote.Text, "restart") {
		t.Errorf("stopped: chat should be disabled with a reason, note %q", w.chatNote.Text)
	}
	if !strings.HasPrefix(w.uptime.Text, "ran ") {
		t.Errorf("uptime %q, want how long it ran", w.uptime.Text)
	}
	if w.exec.entry.Disabled() == false {
		t.Error("exec console enabled on a stopped session")
	}
	if got, _ := h.env.Manager.Get(context.Background(), s.ID); got.State != session.StateStopped {
		t.Errorf("manager says %s", got.State)
	}

	// Restart brings it back, with its log.
	test.Tap(w.restart)
	h.q.WaitFor(t, 30*time.Second, "the restarted session to run", func() bool {
		return strings.HasPrefix(w.state.Text, "Working") && !w.chat.Disabled()
	})
}

// commitAgent commits a file on the session's branch, leaves another
// uncommitted, and exits.
const commitAgent = `echo work > work.txt && git add work.txt && git commit -qm "agent work" && echo draft > draft.txt && echo committed`

func TestSessionWindowMerge(t *testing.T) {
	h := newSWHarness(t)
	s, repo := h.start(t, commitAgent)
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)
	h.q.WaitFor(t, 30*time.Second, "the finished state in the header", func() bool { return w.state.Text == "Finished" })
	head := sessiontest.Git(t, repo, "rev-parse", "HEAD")

	// "Create branch": the agent's commit, and the draft it left
	// uncommitted, which Sandbar committed when the session ended.
	h.q.WaitFor(t, 30*time.Second, "Create branch to be on", func() bool { return !w.branch.Disabled() })
	test.Tap(w.branch)
	h.q.WaitFor(t, 30*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Branch") })
	msg := w.notice.text()
	commit := sessiontest.Git(t, repo, "rev-parse", "refs/heads/"+s.Branch)
	for _, want := range []string{"created", commit[:7], "working tree is untouched"} {
		if !strings.Contains(msg, want) {
			t.Errorf("merge message %q does not say %q", msg, want)
		}
	}
	if subj := sessiontest.Git(t, repo, "log", "-1", "--format=%an|%s", s.Branch); subj != "Sandbar|Work left uncommitted by Sandbar session "+s.ID[:6] {
		t.Errorf("branch %s in the repository is at %q", s.Branch, subj)
	}
	if subj := sessiontest.Git(t, repo, "log", "-1", "--format=%s", s.Branch+"~1"); subj != "agent work" {
		t.Errorf("the commit under Sandbar's is %q, want the agent's", subj)
	}
	if got := sessiontest.Git(t, repo, "show", s.Branch+":draft.txt"); got != "draft" {
		t.Errorf("draft.txt on the branch = %q", got)
	}
	if st := sessiontest.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the repository's working tree changed:\n%s", st)
	}
	if got := sessiontest.Git(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("the repository's HEAD moved from %s to %s", head, got)
	}

	// The branch in the repository moves on its own: merging again is
	// refused, and offered as an overwrite.
	other := sessiontest.Git(t, repo, "commit-tree", "-p", head, "-m", "elsewhere", head+"^{tree}")
	sessiontest.Git(t, repo, "update-ref", "refs/heads/"+s.Branch, other)
	h.q.WaitFor(t, 30*time.Second, "Create branch to be on again", func() bool { return !w.branch.Disabled() })
	test.Tap(w.branch)
	h.q.WaitFor(t, 30*time.Second, "the offer to overwrite a diverged branch", func() bool { return w.notice.button("Overwrite the branch") != nil })
	test.Tap(w.notice.button("Overwrite the branch"))
	h.q.WaitFor(t, 30*time.Second, "the forced merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Branch") })
	if got := sessiontest.Git(t, repo, "rev-parse", "refs/heads/"+s.Branch); got != commit {
		t.Errorf("after the forced merge the branch is at %s, want %s", got, commit)
	}
}

func TestSessionWindowDeleteRefusesUnmergedWork(t *testing.T) {
	h := newSWHarness(t)
	// Work left uncommitted stays so (else Sandbar commits it when the
	// session ends), to be listed as such.
	if err := h.env.Store.SetSetting(context.Background(), store.SettingAutoCommit, "off"); err != nil {
		t.Fatal(err)
	}
	s, _ := h.start(t, commitAgent)
	w := h.open(t, s.ID)
	h.env.WaitState(t, s.ID, session.StateStopped, 30*time.Second)

	test.Tap(w.del)
	h.q.WaitFor(t, 30*time.Second, "the refusal listing the work", func() bool { return w.notice.button("Delete anyway") != nil })
	msg := w.notice.text()
	for _, want := range []string{"draft.txt", "agent work", "not committed", "not merged"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not mention %q", msg, want)
		}
	}
	if _, err := h.env.Manager.Get(context.Background(), s.ID); err != nil {
		t.Fatalf("the session is gone after a refusal: %v", err)
	}

	test.Tap(w.notice.button("Delete anyway"))
	h.q.WaitFor(t, 30*time.Second, "the session to be moved to the trash, with Undo", func() bool {
		_, err := h.env.Manager.Get(context.Background(), s.ID)
		return errors.Is(err, store.ErrNotFound) && w.notice.button("Undo") != nil
	})
	if _, err := os.Stat(h.env.Paths.Session(s.ID)); !os.IsNotExist(err) {
		t.Errorf("the session's directory is still there: %v", err)
	}
	if msg := w.notice.text(); !strings.Contains(msg, "Moved “"+session.Title(s)+"” to the trash") || !strings.Contains(msg, "7 days") {
		t.Errorf("after Delete the notice says %q: want it in the trash for 7 days", msg)
	}
	if w.del.Disabled() == false || w.merge.Disabled() == false {
		t.Error("Delete and Merge are enabled on a session in the trash")
	}

	// Undo: the session is back, in a window of its own.
	test.Tap(w.notice.button("Undo"))
	h.q.WaitFor(t, 30*time.Second, "the session restored and the window opened afresh", func() bool {
		got, err := h.env.Manager.Get(context.Background(), s.ID)
		return err == nil && got.State == session.StateStopped && w.closed
	})
	w.wait()
	var again fyne.Window
	for _, x := range h.u.App.Driver().AllWindows() {
		if x != w.win && x.Title() == w.win.Title() {
			again = x
		}
	}
	if again == nil {
		t.Fatal("no window for the restored session")
	}
	if _, err := os.Stat(h.env.Paths.SessionDir(s.ID).AgentLog()); err != nil {
		t.Errorf("the restored session has no agent log: %v", err)
	}
}

func TestSessionWindowChangesAndDiff(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, `printf 'one\ntwo\nthree\n' > notes.txt; printf '# demo\nmore\n' > README.md; echo edited; while read l; do :; done`)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the changed files in the Changes tab", func() bool {
		return len(w.changes.files) == 2
	})
	t.Logf("summary %q", w.changes.summary.Text)
	if !strings.Contains(w.changes.summary.Text, "2 files changed") {
		t.Errorf("summary %q", w.changes.summary.Text)
	}
	idx := map[string]int{}
	for i, f := range w.changes.files {
		idx[f.Path] = i
	}
	w.changes.list.Select(idx["README.md"])
	h.q.WaitFor(t, 30*time.Second, "README.md's diff", func() bool { return strings.Contains(w.changes.diffText(), "+more") })
	d := w.changes.diffText()
	for _, want := range []string{"--- a/README.md", "+++ b/README.md", "@@ -1 +1,2 @@", " # demo"} {
		if !strings.Contains(d, want) {
			t.Errorf("README.md diff lacks %q:\n%s", want, d)
		}
	}
	w.changes.list.Select(idx["notes.txt"])
	h.q.WaitFor(t, 30*time.Second, "the untracked file's diff", func() bool { return strings.Contains(w.changes.diffText(), "+three") })
	if d := w.changes.diffText(); !strings.Contains(d, "--- /dev/null") {
		t.Errorf("a new file's diff should come from /dev/null:\n%s", d)
	}
}

func TestSessionWindowStatsReachGauges(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the supervisor's 2 s stats")
	}
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "two stats samples in the gauges", func() bool { return w.res.mem.Spark().Len() >= 2 })
	if got := w.res.mem.Text(); !strings.Contains(got, " of ") {
		t.Errorf("memory gauge says %q", got)
	}
	if w.res.mem.Fraction() <= 0 || w.res.mem.Fraction() > 1 {
		t.Errorf("memory gauge at %v", w.res.mem.Fraction())
	}
	if got := w.res.procs.Text(); got == "—" || got == "0" {
		t.Errorf("processes gauge says %q", got)
	}
	if txt := w.res.timing.text("boot"); txt == "" || txt == "—" {
		t.Errorf("boot timing %q", txt)
	}
}

func TestSessionWindowFocusesAnOpenWindow(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	if again := h.u.showSession(s.ID); again != nil {
		t.Error("a second ShowSession opened a second window")
	}
	n := 0
	for _, x := range h.u.App.Driver().AllWindows() {
		if x.Title() == w.win.Title() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d windows titled %q", n, w.win.Title())
	}
	w.win.Close()
	w.wait()
	if !w.closed {
		t.Error("closing the window did not stop it")
	}
}

// fakeClaude is a stand-in for Claude Code: it speaks stream-json, one
// turn with a tool call for each message it reads.
const fakeClaude = `#!/bin/sh
echo '{"type":"system","subtype":"init","model":"claude-test"}'
n=0
while read line; do
  n=$((n+1))
  echo '{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at **turn '$n'**."}]}}'
  echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t'$n'","name":"Bash","input":{"command":"ls -la"}}]}}'
  echo '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t'$n'","content":"README.md"}]}}'
  echo '{"type":"result","subtype":"success","result":"done","duration_ms":1500,"num_turns":2,"total_cost_usd":0.0125}'
done
`

func TestSessionWindowClaudeTranscript(t *testing.T) {
	h := newSWHarness(t)
	bin := t.TempDir()
	for d := bin; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the agent may run as another user
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env.Secrets["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
	repo := h.env.Repo(t, "claude demo")
	// The project's sessions get PATH, which finds the stand-in first.
	h.env.Give(t, repo, "PATH")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Prompt: "What is here?"})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	if w.tabs.Selected().Text != tabTranscript {
		t.Errorf("a Claude Code session's window opens on %q", w.tabs.Selected().Text)
	}
	h.q.WaitFor(t, 30*time.Second, "the first turn in the transcript", func() bool {
		_, done, ok := w.transcript.Tool("t1")
		return ok && done && w.transcript.Len() == 5
	})
	// You, system, text, Bash (folded with its result), result. (The
	// manager records the prompt after sending it, so "You" may come
	// after the agent's answer: only the rows are checked here.)
	kinds := map[sbwidget.EntryKind]int{}
	for _, k := range w.transcript.Kinds() {
		kinds[k]++
	}
	for _, k := range []sbwidget.EntryKind{sbwidget.EntryUser, sbwidget.EntrySystem, sbwidget.EntryText, sbwidget.EntryToolUse, sbwidget.EntryResult} {
		if kinds[k] != 1 {
			t.Errorf("%d %s rows: %v", kinds[k], k, kinds)
		}
	}
	if got, _, _ := w.transcript.Tool("t1"); got != "• Bash  ls -la" {
		t.Errorf("tool row %q", got)
	}
	if last := w.transcript.Len() - 1; w.transcript.Kinds()[last] == sbwidget.EntryResult && !strings.Contains(w.transcript.RowText(last), "$0.0125") {
		t.Errorf("result row %q", w.transcript.RowText(last))
	}

	test.Type(w.chat, "and now?")
	pressEnter(w.chat)
	h.q.WaitFor(t, 30*time.Second, "the second turn", func() bool {
		_, done, ok := w.transcript.Tool("t2")
		return ok && done && w.transcript.Len() == 9
	})

	// A second window on the session reads the same transcript from disk.
	w.win.Close()
	w.wait()
	w2 := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the transcript read back", func() bool { return w2.transcript.Len() == 9 })
}

// refusingChat is the real manager, except that the agent never takes a
// message.
type refusingChat struct{ *session.Manager }

func (refusingChat) Chat(context.Context, string, string) error {
	return errors.New("the agent's input is closed: restart the session")
}

func TestSessionWindowChatErrorShowsInline(t *testing.T) {
	h := newSWHarness(t)
	h.u.Backend = refusingChat{h.env.Manager}
	s, _ := h.start(t, echoAgent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "chat to open", func() bool { return !w.chat.Disabled() })
	test.Type(w.chat, "hello?")
	test.Tap(w.chatSend)
	h.q.WaitFor(t, 30*time.Second, "the error under the chat", func() bool { return w.chatNote.Visible() && w.chatNote.Text != "" })
	if !strings.Contains(w.chatNote.Text, "input is closed") || w.chatNote.Importance != widget.DangerImportance {
		t.Errorf("chat note %q (importance %v)", w.chatNote.Text, w.chatNote.Importance)
	}
	if w.chat.Text != "hello?" {
		t.Errorf("the message was lost: entry %q", w.chat.Text)
	}
	if w.chatSend.Disabled() {
		t.Error("Send stays disabled after a failed send")
	}
}

// TestSessionWindowInterrupt: Interrupt sends SIGINT to a custom agent's
// process group; the tool it ran dies, the agent reads on, and the
// header says it waits for a message. The header's buttons keep their
// places through it.
func TestSessionWindowInterrupt(t *testing.T) {
	h := newSWHarness(t)
	agent := `trap 'intr=1' INT; echo ready
while :; do
	if read -r l; then sh -c "$l"; echo "done: $?"
	elif [ -n "$intr" ]; then intr= # dash's read ends on a trapped signal
	else break; fi
done`
	s, _ := h.start(t, agent)
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the agent to run and Interrupt to be offered", func() bool {
		return logHas(w.logs, "ready") && !w.interrupt.Disabled()
	})
	test.Type(w.chat, "echo tool-running; sleep 4243")
	pressEnter(w.chat)
	// The thin machine runs the real supervisor here: the sleep is a
	// process of this machine. A shell defers SIGINT while it forks, so
	// the interrupt waits for the sleep to run, as a person's would.
	h.q.WaitFor(t, 30*time.Second, "the tool to run", func() bool {
		return logHas(w.logs, "tool-running") && procRuns("sleep\x004243\x00")
	})
	before := w.stop.Position()
	test.Tap(w.interrupt)
	h.q.WaitFor(t, time.Minute, "the tool to die of SIGINT and the header to say interrupted", func() bool {
		return logHas(w.logs, "done: 130") && strings.Contains(strings.ToLower(w.state.Text), "interrupted")
	})
	if !w.interrupt.Disabled() {
		t.Error("waiting after the interrupt: Interrupt still enabled")
	}
	if w.stop.Disabled() || w.chat.Disabled() {
		t.Error("after the interrupt the session should run on: Stop and chat enabled")
	}
	if after := w.stop.Position(); after != before {
		t.Errorf("Stop moved from %v to %v", before, after)
	}
	test.Type(w.chat, "echo after-interrupt")
	pressEnter(w.chat)
	h.q.WaitFor(t, 30*time.Second, "the agent to take the next message", func() bool {
		return logHas(w.logs, "after-interrupt") && !w.interrupt.Disabled()
	})
}

// procRuns reports whether a process of this machine has the command
// line cmdline (NUL-separated, as /proc shows it).
func procRuns(cmdline string) bool {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && string(b) == cmdline {
			return true
		}
	}
	return false
}
