package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/guest/protocol"
)

func TestReady(t *testing.T) {
	guestEnd, hostEnd := netPipe()
	defer hostEnd.Close()
	sys := newFakeSys(t)
	done := make(chan error, 1)
	go func() { done <- New(Config{Workspace: t.TempDir(), Sys: sys}).Serve(t.Context(), guestEnd) }()
	ev, err := protocol.NewReader(hostEnd).ReadEvent()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Ev != protocol.EvReady || ev.Version != protocol.Version || ev.Kernel != "6.1.0-test" || ev.CPUs != 2 || ev.Memory != 2<<30 || ev.Seq != 1 {
		t.Fatalf("ready = %+v", ev)
	}
	hostEnd.Close() // EOF: Serve returns nil
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after EOF: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the host closed the channel")
	}
}

func TestAgentOutputOrderAndExit(t *testing.T) {
	h := newHost(t)
	h.start("s1", `for i in $(seq 1 200); do echo out$i; echo err$i >&2; done; printf tail; exit 3`, nil)
	events := h.until(protocol.EvAgentExit, "")
	exit := events[len(events)-1]
	if exit.Code != 3 || exit.Signal != "" {
		t.Errorf("agent:exit = code %d signal %q, want 3 and none", exit.Code, exit.Signal)
	}
	var wantOut, wantErr []string
	for i := 1; i <= 200; i++ {
		wantOut = append(wantOut, fmt.Sprintf("out%d", i))
		wantErr = append(wantErr, fmt.Sprintf("err%d", i))
	}
	wantOut = append(wantOut, "tail")
	if got := lines(events, protocol.EvAgentStdout); !slices.Equal(got, wantOut) {
		t.Errorf("stdout lines = %q\nwant %q", got, wantOut)
	}
	if got := lines(events, protocol.EvAgentStderr); !slices.Equal(got, wantErr) {
		t.Errorf("stderr lines = %q\nwant %q", got, wantErr)
	}
	// Nothing of the agent may follow its exit: the next event is the
	// exec's.
	_, _, res := h.execOutput(protocol.Command{ID: "after", Argv: []string{"true"}})
	if res.Code != 0 {
		t.Errorf("exec after exit: %+v", res)
	}
}

func TestChat(t *testing.T) {
	h := newHost(t)
	h.start("s", `echo ready; while read line; do echo "got:$line"; done; echo eof`, nil)
	h.waitLine("ready")
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c1", Text: "hello"})
	h.waitLine("got:hello")
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c2", Text: "two words\n"})
	h.waitLine("got:two words")
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c3", Text: ""})
	h.waitLine("got:")
	h.send(protocol.Command{Cmd: protocol.CmdStop, Grace: 2000})
	events := h.until(protocol.EvAgentExit, "")
	if e := events[len(events)-1]; e.Signal != "SIGTERM" || e.Code != 143 {
		t.Errorf("exit after stop = %+v, want SIGTERM/143", e)
	}
}

// TestInterrupt: interrupt is Ctrl-C for an agent without a terminal.
// SIGINT reaches the tool the agent runs (its group's member), which
// dies of it; the agent, which handles SIGINT, lives on and reads its
// next message. Without an agent, interrupt is refused.
func TestInterrupt(t *testing.T) {
	h := newHost(t)
	h.start("s", `trap 'echo interrupted' INT; echo ready; while read line; do sh -c "$line"; echo "done:$?"; done`, nil)
	h.waitLine("ready")
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c1", Text: "echo tool; sleep 4242"})
	h.waitLine("tool")
	// A shell defers SIGINT while it forks: the signal must find the
	// sleep running, as a person's Ctrl-C does.
	waitProc(t, "sleep\x004242\x00")
	h.send(protocol.Command{Cmd: protocol.CmdInterrupt, ID: "i1"})
	events := h.waitLine("done:130") // the tool died of SIGINT
	for _, e := range events {
		if e.Ev == protocol.EvError {
			t.Errorf("interrupt answered %+v", e)
		}
	}
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c2", Text: "echo next"})
	h.waitLine("next")
	h.send(protocol.Command{Cmd: protocol.CmdStop, Grace: 2000})
	h.until(protocol.EvAgentExit, "")
	h.send(protocol.Command{Cmd: protocol.CmdInterrupt, ID: "i2"})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "i2" || !strings.Contains(e.Message, "nothing to interrupt") {
		t.Errorf("interrupt without agent: %+v, want error", e)
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantCode   int
		wantSignal string
		wantLine   string
	}{
		{"traps TERM", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, 0, "", "bye"},
		{"ignores TERM", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, 137, "SIGKILL", ""},
		{"exits 143 itself", `trap 'exit 143' TERM; echo ready; while :; do sleep 0.05; done`, 143, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t)
			h.start("s", tt.script, nil)
			h.waitLine("ready")
			began := time.Now()
			h.send(protocol.Command{Cmd: protocol.CmdStop, Grace: 300})
			events := h.until(protocol.EvAgentExit, "")
			took := time.Since(began)
			exit := events[len(events)-1]
			if exit.Code != tt.wantCode || exit.Signal != tt.wantSignal {
				t.Errorf("agent:exit = code %d signal %q, want %d %q", exit.Code, exit.Signal, tt.wantCode, tt.wantSignal)
			}
			if tt.wantLine != "" && !slices.Contains(lines(events, protocol.EvAgentStdout), tt.wantLine) {
				t.Errorf("the agent's last words %q are missing", tt.wantLine)
			}
			if took > 5*time.Second {
				t.Errorf("stop with 300ms grace took %v", took)
			}
			h.send(protocol.Command{Cmd: protocol.CmdStop, ID: "again"})
			if e := h.next(); e.Ev != protocol.EvError || e.ID != "again" {
				t.Errorf("stop without agent: %+v, want error", e)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdChat, ID: "c0", Text: "hi"})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "c0" || e.Cmd != protocol.CmdChat {
		t.Errorf("chat without agent: %+v, want error with id c0", e)
	}
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "bad", Agent: &protocol.Agent{Command: "no-such-agent-xyz"}})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "bad" || !strings.Contains(e.Message, "PATH") {
		t.Errorf("start of a missing program: %+v, want error naming PATH", e)
	}
	h.start("s1", "cat", nil)
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "s2", Agent: &protocol.Agent{Command: "cat"}})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "s2" || e.Cmd != protocol.CmdStart {
		t.Errorf("second start: %+v, want error with id s2", e)
	}
	h.sys.mu.Lock()
	if len(h.sys.times) != 0 {
		t.Errorf("SetTime called without a time")
	}
	h.sys.mu.Unlock()
}

func TestStartTimeAndEnv(t *testing.T) {
	h := newHost(t)
	when := time.Date(2030, 5, 6, 7, 8, 9, 10, time.UTC)
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "s", Time: when.UnixNano(),
		Env:   map[string]string{"SECRET": "s3", "LANG": "en_US.UTF-8"},
		Agent: &protocol.Agent{Command: "sh", Args: []string{"-c", `echo "$SECRET|$LANG|$TERM|$HOME|$USER|$PATH|$(pwd)"`}}})
	events := h.until(protocol.EvAgentExit, "")
	got := lines(events, protocol.EvAgentStdout)
	home := filepath.Join(h.sys.home, "agent")
	want := "s3|en_US.UTF-8|dumb|" + home + "|agent|" + basePath + "|" + h.ws
	if len(got) != 1 || got[0] != want {
		t.Errorf("agent saw %q, want %q", got, want)
	}
	h.sys.mu.Lock()
	defer h.sys.mu.Unlock()
	if len(h.sys.times) != 1 || !h.sys.times[0].Equal(when) {
		t.Errorf("SetTime got %v, want %v (its EPERM must not stop the start)", h.sys.times, when)
	}
}

func TestGitSetup(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	h := newHost(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", h.ws, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "first")
	git("branch", "sandbar/s1")

	// A new session's clone sits detached at its base: a branch it lacks
	// is made there, at HEAD.
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "nobranch", Branch: "sandbar/new",
		Agent: &protocol.Agent{Command: "git", Args: []string{"rev-parse", "--abbrev-ref", "HEAD"}}})
	if e := h.next(); e.Ev != protocol.EvAgentStarted {
		t.Fatalf("start on a new branch: %+v", e)
	}
	if got := lines(h.until(protocol.EvAgentExit, ""), protocol.EvAgentStdout); !slices.Equal(got, []string{"sandbar/new"}) {
		t.Fatalf("start on a new branch: HEAD is %q", got)
	}
	git("switch", "-q", "main")
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "badbranch", Branch: "-x",
		Agent: &protocol.Agent{Command: "true"}})
	if e := h.next(); e.Ev != protocol.EvError || e.ID != "badbranch" || !strings.Contains(e.Message, "-x") {
		t.Fatalf("start on a bad branch name: %+v, want error", e)
	}

	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "s", Branch: "sandbar/s1",
		Git:   &protocol.GitIdentity{Name: `Ada "the" Coder\`, Email: "ada@example.org"},
		Env:   map[string]string{"GITHUB_TOKEN": "tok123"},
		Agent: &protocol.Agent{Command: "sh", Args: []string{"-c", `git rev-parse --abbrev-ref HEAD; git config user.name; git config user.email; printf 'protocol=https\nhost=github.com\n\n' | git credential fill`}}})
	if e := h.next(); e.Ev != protocol.EvAgentStarted {
		t.Fatalf("start: %+v", e)
	}
	events := h.until(protocol.EvAgentExit, "")
	got := lines(events, protocol.EvAgentStdout)
	want := []string{"sandbar/s1", `Ada "the" Coder\`, "ada@example.org",
		"protocol=https", "host=github.com", "username=x-access-token", "password=tok123"}
	if !slices.Equal(got, want) {
		t.Errorf("agent saw %q\nwant %q\nstderr %q", got, want, lines(events, protocol.EvAgentStderr))
	}
	cfg, err := os.ReadFile(filepath.Join(h.sys.home, "agent", ".gitconfig"))
	if err != nil || strings.Contains(string(cfg), "tok123") || !strings.Contains(string(cfg), h.ws) {
		t.Errorf(".gitconfig must list the workspace as safe and hold no token: %v\n%s", err, cfg)
	}
}

func TestAgentLongLine(t *testing.T) {
	h := newHost(t)
	var line bytes.Buffer
	for line.Len() < 5<<20 {
		fmt.Fprintf(&line, "%08d é\"\\\t✓", line.Len())
	}
	line.WriteByte(0xff) // not UTF-8: this piece travels as b64
	path := filepath.Join(t.TempDir(), "line")
	if err := os.WriteFile(path, append(line.Bytes(), "\nafter\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start("s", "cat '"+path+"'", nil)
	events := h.until(protocol.EvAgentExit, "")
	got := lines(events, protocol.EvAgentStdout)
	if len(got) != 2 || got[0] != line.String() || got[1] != "after" {
		lens := []int{}
		for _, g := range got {
			lens = append(lens, len(g))
		}
		t.Fatalf("got %d lines of lengths %v, want the %d byte line and \"after\"", len(got), lens, line.Len())
	}
}

func TestBadCommandsKeepServing(t *testing.T) {
	h := newHost(t)
	raw := func(s string) {
		t.Helper()
		if _, err := h.conn.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, line, wantID, wantCmd, wantIn string
	}{
		{"malformed", `{"cmd":"exec","id":"m1",` + "\n", "", "", "malformed"},
		{"unknown", `{"cmd":"dance","id":"u1"}` + "\n", "u1", "dance", "unknown"},
		{"invalid", `{"cmd":"exec","id":"i1"}` + "\n", "i1", "exec", "argv"},
		{"too long", `{"cmd":"chat","id":"l1","text":"` + strings.Repeat("x", 2<<20) + "\"}\n", "", "", "split"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw(tt.line)
			e := h.next()
			if e.Ev != protocol.EvError || e.ID != tt.wantID || e.Cmd != tt.wantCmd || !strings.Contains(e.Message, tt.wantIn) {
				t.Errorf("got %+v, want error id %q cmd %q mentioning %q", e, tt.wantID, tt.wantCmd, tt.wantIn)
			}
			out, _, res := h.execOutput(protocol.Command{ID: "ok", Argv: []string{"echo", "still here"}})
			if string(out) != "still here\n" || res.Code != 0 {
				t.Errorf("after the bad line: %q %+v", out, res)
			}
		})
	}
}

func TestShutdown(t *testing.T) {
	h := newHost(t)
	started := h.start("s", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, nil)
	h.waitLine("ready")
	h.send(protocol.Command{Cmd: protocol.CmdExec, ID: "long", Argv: []string{"sleep", "30"}})
	agentAlive := true
	h.sys.beforeOff = func() {
		agentAlive = syscall.Kill(started.PID, 0) == nil
	}
	h.send(protocol.Command{Cmd: protocol.CmdShutdown})
	var seen []string
	serveDone := h.serveDone
	for reading := true; reading; {
		select {
		case e, ok := <-h.events:
			if !ok {
				reading = false
			} else if e.Ev != protocol.EvStats {
				seen = append(seen, e.Ev)
			}
		case <-serveDone:
			// Serve flushed everything before returning: closing its end
			// lets the reader reach EOF once it has read it all.
			h.guest.Close()
			serveDone = nil
		case <-time.After(20 * time.Second):
			t.Fatalf("shutdown did not finish; saw %v", seen)
		}
	}
	if err := served(h); err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
	<-h.sys.poweredOff
	if agentAlive {
		t.Error("Poweroff was called while the agent still existed")
	}
	if !slices.Contains(seen, protocol.EvAgentExit) || !slices.Contains(seen, protocol.EvExecResult) {
		t.Errorf("before the end the host saw %v; want agent:exit and exec:result", seen)
	}
}

func TestStats(t *testing.T) {
	h := newHost(t)
	h.send(protocol.Command{Cmd: protocol.CmdStart, ID: "s", StatsInterval: 50,
		Agent: &protocol.Agent{Command: "cat"}})
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e := <-h.events:
			if e.Ev != protocol.EvStats {
				continue
			}
			if e.MemTotal == 0 || e.MemUsed == 0 || e.Procs == 0 || e.CPU < 0 || e.CPU > 100 ||
				e.Disk == nil || e.Disk.Workspace.Total != 100 || e.Disk.Scratch.Used != 10 {
				t.Fatalf("stats = %+v", e)
			}
			return
		case <-deadline:
			t.Fatal("no stats event within 15s of start with a 50ms interval")
		}
	}
}

func TestReadyNetError(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"DHCP on eth0: no offer within 3s", "DHCP on eth0: no offer within 3s"},
		{strings.Repeat("é", protocol.MaxNetError), strings.Repeat("é", protocol.MaxNetError/2)},
		{"bad \xff byte", "bad ? byte"},
	} {
		guestEnd, hostEnd := netPipe()
		done := make(chan error, 1)
		go func() {
			done <- New(Config{Workspace: t.TempDir(), Sys: newFakeSys(t), NetError: tt.in}).Serve(t.Context(), guestEnd)
		}()
		ev, err := protocol.NewReader(hostEnd).ReadEvent()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Ev != protocol.EvReady || ev.NetError != tt.want {
			t.Errorf("NetError %.40q: ready carries %.40q (%d bytes), want %.40q", tt.in, ev.NetError, len(ev.NetError), tt.want)
		}
		hostEnd.Close()
		if err := <-done; err != nil {
			t.Fatalf("Serve after EOF: %v", err)
		}
	}
}

// waitProc waits until a process of this machine has the command line
// cmdline (NUL-separated, as /proc shows it).
func waitProc(t *testing.T, cmdline string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && string(b) == cmdline {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no process runs %q after 30 s", cmdline)
}
