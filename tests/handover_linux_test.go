//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/app/desktop/desktoptest"
)

// TestKeyringHandOverAcrossLoginSessions: an engine started from another
// login session, whose D-Bus session bus has no Secret Service, cannot
// read the secrets a project's sessions need. A start from a process that
// cannot reach the keyring either fails, naming the keyring, and leaves
// that engine be; the same start from this login session, which reaches
// the real gnome-keyring, has the engine yield, starts an engine of its
// own here, and the agent gets the secret.
func TestKeyringHandOverAcrossLoginSessions(t *testing.T) {
	w := newWorld(t)
	const token = "handover-e2e-3b7f9a1c5d"
	if _, errOut, code := w.run(token+"\n", "secrets", "set", "MY_TOKEN"); code != 0 {
		t.Fatalf("secrets set: %s", errOut)
	}
	w.ok("project", "add", w.repo)
	w.ok("project", "secrets", w.repo, "MY_TOKEN")
	// Adding the project started an engine in this login session: it
	// goes, for one from the other session to take its place.
	w.stopEngine()
	if pid := w.enginePID(); running(pid) {
		t.Fatalf("the engine that adding the project started (pid %d) is still running", pid)
	}

	// The other login session: its own bus, nothing on it.
	away := *w
	away.env = append(withoutVar(w.env, "DBUS_SESSION_BUS_ADDRESS"), "DBUS_SESSION_BUS_ADDRESS="+desktoptest.Bus(t))
	headless := startServe(t, &away)

	agent := `echo "token=$MY_TOKEN"; sleep 600`
	start := []string{"start", "--repo", w.repo, "--agent", agent, "--cpus", "1", "--memory", "512", "--disk", "1", "--no-network"}

	// From the other session too: neither side reaches the keyring.
	out, errOut, code := away.run("", start...)
	if code == 0 || !strings.Contains(errOut, "Secret Service") {
		t.Fatalf("start where nothing reaches the keyring: exit %d, want a failure naming the keyring\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("start where nothing reaches the keyring: %s", strings.TrimSpace(errOut))
	if strings.Contains(out+errOut, token) {
		t.Error("the failed start printed the secret's value")
	}
	if pid := w.enginePID(); pid != headless.pid() || !headless.running() {
		t.Fatalf("after the failed start the engine is pid %d (running %v), want the headless one, %d, still serving", pid, headless.running(), headless.pid())
	}
	if ss := w.ls(); len(ss) != 0 {
		t.Errorf("the failed start left sessions: %+v", ss)
	}
	if dirs, _ := os.ReadDir(filepath.Join(w.home, "sessions")); len(dirs) != 0 {
		t.Errorf("the failed start left %d session folder(s)", len(dirs))
	}

	// From this session: the engine hands over, and the start succeeds.
	id := w.startID(start[1:]...)
	select {
	case <-headless.exited:
	case <-time.After(handOverLimit):
		t.Fatalf("the headless engine (pid %d) still runs %s after the start that needed it to hand over\n%s", headless.pid(), handOverLimit, headless.log())
	}
	if err := headless.err; err != nil {
		t.Errorf("the headless engine exited with %v\n%s", err, headless.log())
	}
	if log := headless.log(); !strings.Contains(log, "engine handed over to a client that can reach the keyring") {
		t.Errorf("the headless engine's log does not say it handed over:\n%s", log)
	}
	next := w.enginePID()
	if next == 0 || next == headless.pid() || !running(next) {
		t.Fatalf("after the hand-over engine.lock names pid %d (running %v), want a new engine", next, running(next))
	}
	if bus := processEnv(t, next, "DBUS_SESSION_BUS_ADDRESS"); bus != os.Getenv("DBUS_SESSION_BUS_ADDRESS") {
		t.Errorf("the new engine (pid %d) runs on the bus %q, want this session's, %q", next, bus, os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	}
	w.waitState(id, "running")
	// The agent printed the secret; the log shows it redacted, which it
	// can only be if the value the agent printed was the secret's.
	waitLog(t, w, id, "token=[redacted:MY_TOKEN]")
	if logs := w.ok("logs", id); strings.Contains(logs, token) {
		t.Errorf("the session's log holds the secret's value:\n%s", logs)
	}
	if pid := w.enginePID(); pid != next {
		t.Errorf("engine.lock names pid %d while the session runs, want %d", pid, next)
	}

	w.ok("stop", id)
	w.ok("rm", id)
	if n := qemuUnder(w.home); n != 0 {
		t.Errorf("%d qemu processes left after stop and rm", n)
	}
}

// handOverLimit bounds how long a yielding engine may take to exit once
// the start that asked it to has returned: it has no session to stop.
const handOverLimit = 30 * time.Second

// serveProc is a `sandbar serve` the test started itself.
type serveProc struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // set before exited is closed
}

func (s *serveProc) pid() int { return s.cmd.Process.Pid }

func (s *serveProc) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *serveProc) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// startServe starts `sandbar serve` with w's environment, as a command in
// another login session would, and waits until it holds engine.lock, which
// it writes once its socket listens. It never exits idle: only a hand-over
// (or the test's end) stops it.
func startServe(t *testing.T, w *world) *serveProc {
	t.Helper()
	s := &serveProc{logPath: filepath.Join(t.TempDir(), "serve.log"), exited: make(chan struct{})}
	logF, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logF.Close()
	s.cmd = exec.Command(w.bin, "serve", "--idle-exit", "0")
	// Info level, for its log to say that it handed over.
	s.cmd.Env = append(w.env, "SANDBAR_DEBUG=1")
	s.cmd.Dir = w.home
	s.cmd.Stdout, s.cmd.Stderr = logF, logF
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sandbar serve: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if !s.running() {
			return
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(engineStopLimit):
			t.Errorf("the headless engine (pid %d) did not stop within %s of SIGTERM: killed", s.pid(), engineStopLimit)
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	if !waitUntil(30*time.Second, 50*time.Millisecond, func() bool { return !s.running() || w.enginePID() == s.pid() }) || !s.running() {
		t.Fatalf("sandbar serve (pid %d, running %v) did not take engine.lock (it names %d)\n%s", s.pid(), s.running(), w.enginePID(), s.log())
	}
	w.ok("ls")
	return s
}

// processEnv reads one variable of a process's environment.
func processEnv(t *testing.T, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("read the environment of pid %d: %v", pid, err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// withoutVar is env without the variable key.
func withoutVar(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
