//go:build linux

package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// attackStepDeadline bounds every host command of these tests; one that
// runs past it has hung.
const attackStepDeadline = 2 * time.Minute

// markerPrefix starts the name of every marker file a planted command
// would create, so the data folder and repositories can be searched too.
const markerPrefix = "sandbar-pwned-"

// safeHostPath is what a host path must look like to be written unquoted
// into git config values and shell commands by the hostile scripts.
var safeHostPath = regexp.MustCompile(`^[A-Za-z0-9/_.+-]+$`)

// hostileWorld is a world plus the host paths a hostile agent aims at.
type hostileWorld struct {
	*world
	t       *testing.T
	markers string // host folder planted commands would write into
	victim  string // another host repository, which must stay byte-identical
	hostCfg string // a host file the agent's include.path names
	fifo    string // a FIFO on the host, for symlinks where git expects files
	secret  string // hash of a blob only the victim holds
	vhead   string // the victim's head commit

	seen  map[string]bool // markers already reported
	quiet bool            // steps log only when slow (polling)
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	h := &hostileWorld{t: t, seen: map[string]bool{}}
	// Registered before newWorld's own cleanup, so it runs after it: the
	// engine is asked to stop first, then whatever is left is reported.
	t.Cleanup(func() { h.reapLeftovers() })
	h.world = newWorld(t)
	t.Cleanup(func() { h.stopEngineHard() })
	root := t.TempDir()
	h.markers = filepath.Join(root, "markers")
	h.victim = filepath.Join(root, "victim")
	h.hostCfg = filepath.Join(root, "hostcfg", "included.gitconfig")
	h.fifo = filepath.Join(root, "hostfifo", "fifo")
	for _, p := range []string{h.markers, h.victim, h.hostCfg, h.fifo} {
		if !safeHostPath.MatchString(p) {
			t.Fatalf("temporary path %q has characters the hostile scripts cannot carry unquoted", p)
		}
	}
	os.MkdirAll(h.markers, 0o755)
	os.MkdirAll(filepath.Dir(h.hostCfg), 0o755)
	os.MkdirAll(filepath.Dir(h.fifo), 0o755)
	if err := syscall.Mkfifo(h.fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(h.hostCfg, []byte("[filter \"inc\"]\n\tclean = touch "+h.markers+"/"+markerPrefix+"include-filter; cat\n\tsmudge = touch "+h.markers+"/"+markerPrefix+"include-smudge; cat\n"), 0o644)

	// The victim: another repository of the person's, with a file only it
	// holds and a README that differs from the source's.
	os.MkdirAll(h.victim, 0o755)
	os.WriteFile(filepath.Join(h.victim, "secret.txt"), []byte("a secret only the victim repository holds\n"), 0o644)
	os.WriteFile(filepath.Join(h.victim, "README.md"), []byte("# victim\n"), 0o644)
	h.gitIn(h.victim, "init", "-q")
	h.gitIn(h.victim, "add", ".")
	h.gitIn(h.victim, "commit", "-qm", "victim")
	h.secret = h.gitIn(h.victim, "rev-parse", "HEAD:secret.txt")
	h.vhead = h.gitIn(h.victim, "rev-parse", "HEAD")
	return h
}

func (h *hostileWorld) gitIn(dir string, args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), attackStepDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitScript writes the hostile script into the repository, with the host
// paths it aims at set as shell variables, and commits it.
func (h *hostileWorld) commitScript(body string) {
	h.t.Helper()
	vars := fmt.Sprintf("M=%s\nVICTIM=%s\nSRC=%s\nHOSTCFG=%s\nHOSTFIFO=%s\nVSECRET=%s\nVHEAD=%s\n",
		shq(h.markers), shq(h.victim), shq(h.repo), shq(h.hostCfg), shq(h.fifo), shq(h.secret), shq(h.vhead))
	os.WriteFile(filepath.Join(h.repo, "hostile.sh"), []byte("#!/bin/sh\n"+vars+body), 0o755)
	h.git("add", "hostile.sh")
	h.git("commit", "-qm", "the hostile agent's script")
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// stepResult is one host command's outcome.
type stepResult struct {
	out, errOut string
	code        int
	hung        bool
	maxRSS      int64 // bytes, from the process's rusage
}

// step runs sandbar under attackStepDeadline. A command that runs past it
// is reported as hung, naming the step; markers are looked for after it.
func (h *hostileWorld) step(name string, args ...string) stepResult {
	h.t.Helper()
	return h.stepWithin(attackStepDeadline, name, args...)
}

func (h *hostileWorld) stepWithin(limit time.Duration, name string, args ...string) stepResult {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	cmd.Dir = h.repo
	cmd.WaitDelay = 5 * time.Second // an engine child holding our pipes must not hang the test
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := stepResult{out: o.String(), errOut: e.String()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss * 1024
		}
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.hung = true
		h.t.Errorf("%s hung: `sandbar %s` still ran after %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), limit, clip(r.out), clip(r.errOut))
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		h.t.Fatalf("%s: sandbar %v: %v", name, args, err)
	}
	if took := time.Since(start); !h.quiet || took > 5*time.Second {
		h.t.Logf("%s: `sandbar %s` exited %d in %v", name, strings.Join(args, " "), r.code, took.Round(time.Millisecond))
	}
	h.checkMarkers("by the time " + name + " returned")
	return r
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + fmt.Sprintf("\n... (%d bytes) ...\n", len(s)-2000) + s[len(s)-1000:]
	}
	return s
}

// checkMarkers reports each new file in the markers folder once.
func (h *hostileWorld) checkMarkers(when string) {
	h.t.Helper()
	entries, _ := os.ReadDir(h.markers)
	for _, e := range entries {
		if !h.seen[e.Name()] {
			h.seen[e.Name()] = true
			h.t.Errorf("host code ran the agent's command: marker %s appeared %s", e.Name(), when)
		}
	}
}

// markersUnder lists files named like markers anywhere under dirs, without
// following symlinks.
func markersUnder(dirs ...string) []string {
	var found []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(e.Name(), markerPrefix) {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}

// waitPlanted waits until the agent's log says text, failing if the
// session stops first or the deadline passes.
func (h *hostileWorld) waitPlanted(id, text string, limit time.Duration) {
	h.t.Helper()
	var r stepResult
	polls, start := 0, time.Now()
	h.quiet = true
	said := waitUntil(limit, 500*time.Millisecond, func() bool {
		polls++
		r = h.step("reading the log while the agent ran (the engine's watcher runs meanwhile)", "logs", id)
		if strings.Contains(r.out, text) {
			return true
		}
		if strings.Contains(r.out, "hostile: could not plant") {
			h.t.Fatalf("the hostile script failed inside the guest:\n%s\n%s", r.out, r.errOut)
		}
		s := h.session(id)
		if s.State == "stopped" || s.State == "failed" || s.State == "interrupted" {
			h.t.Fatalf("session %s is %s (%s) before its agent said %q:\n%s\n%s", id, s.State, s.Reason, text, clip(r.out), clip(r.errOut))
		}
		return false
	})
	h.t.Logf("read the log %d times over %v while the agent planted", polls, time.Since(start).Round(time.Millisecond))
	h.quiet = false
	if !said {
		h.diagnose(id)
		h.t.Fatalf("the agent did not say %q within %v:\n%s\n%s", text, limit, clip(r.out), clip(r.errOut))
	}
	var lines []string
	for _, l := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(l, "hostile: ") {
			lines = append(lines, l)
		}
	}
	h.t.Logf("the agent said:\n%s", strings.Join(lines, "\n"))
}

// hostSteps drives everything the host does with a running session that
// has planted its tricks. A step that fails is reported and the next one
// runs; at the first hang it stops (later steps would wait on the hung
// one) and says which steps it did not run.
func (h *hostileWorld) hostSteps(id string, checkChanges func(stepResult)) {
	h.t.Helper()
	h.checkMarkers("while the agent ran (the engine's workspace watcher)")
	steps := []struct {
		name string
		run  func() bool // false: stop here
	}{
		{"changes while running", func() bool {
			// The agent may have broken its own clone: then `changes`
			// fails, saying why, which is all it owes.
			r := h.step("changes while running", "changes", id)
			if !r.hung && r.code != 0 && strings.TrimSpace(r.errOut) == "" {
				h.t.Errorf("changes while running exited %d without saying why", r.code)
			} else if !r.hung && r.code == 0 && checkChanges != nil {
				checkChanges(r)
			}
			return !r.hung
		}},
		{"stop", func() bool { return h.stopStep("stop", id) }},
		{"changes while stopped", func() bool {
			r := h.step("changes while stopped", "changes", id)
			if !r.hung && r.code != 0 && strings.TrimSpace(r.errOut) == "" {
				h.t.Errorf("changes while stopped exited %d without saying why", r.code)
			} else if !r.hung && r.code == 0 && checkChanges != nil {
				checkChanges(r)
			}
			return !r.hung
		}},
		{"restart", func() bool {
			ok, hung := h.mustStep("restart", "restart", id)
			if ok {
				h.waitPlanted(id, "hostile: restarted", 4*time.Minute)
			}
			return !hung
		}},
		{"stop after restart", func() bool { return h.stopStep("stop after restart", id) }},
		{"merge", func() bool {
			merge := h.step("merge", "merge", id)
			if !merge.hung && merge.code != 0 && strings.TrimSpace(merge.errOut) == "" {
				h.t.Errorf("merge exited %d without saying why", merge.code)
			}
			h.t.Logf("merge said: %s%s", merge.out, merge.errOut)
			return !merge.hung
		}},
		{"rm", func() bool { r := h.step("rm", "rm", id); return !r.hung }},
		{"rm --force", func() bool {
			// rm may have deleted it already (nothing unsaved to lose).
			listed := false
			for _, s := range h.ls() {
				listed = listed || s.ID == id
			}
			if !listed {
				return true
			}
			if ok, hung := h.mustStep("rm --force", "rm", "--force", id); !ok {
				return !hung
			}
			for _, s := range h.ls() {
				if s.ID == id {
					h.t.Errorf("session %s still listed after rm --force: %+v", id, s)
				}
			}
			return true
		}},
	}
	for i, s := range steps {
		if !s.run() {
			var left []string
			for _, l := range steps[i+1:] {
				left = append(left, l.name)
			}
			if len(left) > 0 {
				h.t.Errorf("not run because %s hung: %s", s.name, strings.Join(left, ", "))
			}
			return
		}
	}
}

// stopStep stops the session. The agent may have broken git in its clone
// so that its work cannot be saved: then stop exits non-zero and says so
// in one line (never that it stopped fine). It returns false if stop hung.
func (h *hostileWorld) stopStep(name, id string) bool {
	h.t.Helper()
	r := h.step(name, "stop", id)
	if r.hung {
		return false
	}
	msg := strings.TrimSpace(r.errOut)
	switch {
	case r.code == 0:
	case strings.Contains(msg, "could not be saved") && !strings.Contains(msg, "\n"):
		h.t.Logf("%s: the work was not saved, and stop said so: %s", name, msg)
	default:
		h.t.Errorf("%s exited %d\nstdout: %s\nstderr: %s", name, r.code, clip(r.out), clip(r.errOut))
	}
	return true
}

// mustStep runs a step that must succeed, reporting a failure. It returns
// whether the step succeeded and whether it hung.
func (h *hostileWorld) mustStep(name string, args ...string) (ok, hung bool) {
	h.t.Helper()
	r := h.step(name, args...)
	if r.hung {
		return false, true
	}
	if r.code != 0 {
		h.t.Errorf("%s exited %d\nstdout: %s\nstderr: %s", name, r.code, clip(r.out), clip(r.errOut))
		return false, false
	}
	return true, false
}

// engineStopLimit is how long an engine may take to stop after SIGTERM:
// `sandbar serve` gives its sessions 30 s to stop and then kills their
// VMs, which takes moments.
const engineStopLimit = 45 * time.Second

// stopEngineHard stops the engine, and kills it if SIGTERM is not enough
// (a hung engine is itself a failure).
func (h *hostileWorld) stopEngineHard() {
	pid := h.enginePID()
	if !running(pid) {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	waitUntil(engineStopLimit, 100*time.Millisecond, func() bool { return !running(pid) })
	if running(pid) {
		h.t.Errorf("the engine (pid %d) did not stop within %v of SIGTERM: killed", pid, engineStopLimit)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// reapLeftovers kills, by pid, any process still running in or naming one
// of this test's folders once the engine is gone (a git blocked on a FIFO
// would otherwise outlive the test), and reports it.
func (h *hostileWorld) reapLeftovers() {
	if h.world == nil || h.markers == "" {
		return // skipped before anything started
	}
	roots := []string{h.home, filepath.Dir(h.markers), filepath.Dir(filepath.Dir(h.repo))}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || isZombie(pid) {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		for _, r := range roots {
			if r == "" || r == "." {
				continue
			}
			if strings.HasPrefix(cwd, r) || bytes.Contains(cmdline, []byte(r)) {
				h.t.Errorf("process %d (%s) still ran in the test's folders after the engine stopped: killed", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}

func isZombie(pid int) bool {
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return bytes.Contains(st, []byte(") Z "))
}

// diagnose logs what helps read a session that stopped making progress:
// the guest's processes and what each waits on, the end of the VM's
// console, the session's state and the end of the engine's log.
func (h *hostileWorld) diagnose(id string) {
	h.t.Helper()
	ps := h.stepWithin(30*time.Second, "the guest's processes", "exec", id, "--", "ps", "-eo", "pid,ppid,stat,etime,time,wchan:24,args")
	h.t.Logf("the guest's processes (exit %d, hung %v):\n%s%s", ps.code, ps.hung, clip(ps.out), clip(ps.errOut))
	if b, err := os.ReadFile(filepath.Join(h.home, "sessions", id, "console.log")); err == nil {
		h.t.Logf("the end of the VM's console:\n%s", clip(lastLines(string(b), 40)))
	}
	h.t.Logf("the session: %+v", h.session(id))
	h.logEngineWarnings()
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (h *hostileWorld) logEngineWarnings() {
	b, err := os.ReadFile(filepath.Join(h.home, "engine.log"))
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return
	}
	h.t.Logf("the end of the engine's log:\n%s", clip(lastLines(strings.TrimSpace(string(b)), 40)))
}

// addSubmodules adds submodules at paths, all from one library repository
// beside the source, and commits them.
func (h *hostileWorld) addSubmodules(paths ...string) {
	h.t.Helper()
	lib := filepath.Join(filepath.Dir(h.repo), "bibliothèque")
	os.MkdirAll(lib, 0o755)
	h.gitIn(lib, "init", "-q")
	h.gitIn(lib, "commit", "-q", "--allow-empty", "-m", "lib start")
	for _, p := range paths {
		h.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, p)
	}
	h.git("commit", "-qm", "add libs")
}

// hasObject says whether the repository at dir holds object.
func (h *hostileWorld) hasObject(dir, object string) bool {
	cmd := exec.Command("git", "-C", dir, "cat-file", "-e", object)
	cmd.Env = h.env
	return cmd.Run() == nil
}

// vmHWM reads a process's peak resident set size, in bytes.
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
