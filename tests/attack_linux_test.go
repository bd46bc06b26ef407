//go:build linux

package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Hostile agents, end to end.
//
// Threat model: the agent in a session is hostile (or prompt-injected). It
// owns everything inside its VM, including the session's clone: its working
// tree and every byte of its .git. Sandbar promises that nothing it does
// there reaches the person's machine beyond the session: no host code runs
// on its behalf, the person's repository (and any other host repository)
// keeps every byte it had, and no host command that handles the session
// hangs. A host path the agent names matters only if host-side code reads
// or follows it, which is exactly what these tests look for.
//
// Each case starts a real session whose --agent is a shell script committed
// into the repository beforehand ("hostile.sh"). The script plants its
// tricks from inside the guest, says "hostile: planted", gives the host's
// workspace watcher five seconds to react, says "hostile: settled" and
// waits. Every
// planted command would only `touch` a file in a host folder the test made
// (the markers folder), which does not exist inside the guest, so a marker
// can only appear if a host process ran the command. The test then drives
// everything the host does with a session, each command under a deadline:
// the engine's workspace watcher (it runs while the agent does), `changes`
// while running, `stop`, `changes` while stopped, `restart` (the script
// sees it planted already and just waits), `stop`, `merge`, `rm` and
// `rm --force`. After each step it looks for markers; at the end it looks
// for them under the data folder and the repositories too, runs
// `git fsck --full` in the source repository and its submodules, and
// compares a hash of every file of the source repository (working tree and
// .git, config and hooks included, with owners and modes) with the one taken
// before the session: the only changes allowed are new objects, the
// sandbar/<id> branch (ref and reflog) and FETCH_HEAD. Other host
// repositories the script points at are compared byte for byte, with no
// allowance. Merge may land the branch or refuse it, but may not hang.
//
// The cases share one VM per group of tricks that can be planted together
// honestly (CI time is limited; the cases run in parallel). Tricks that
// would hide others go apart: a symlinked submodule makes git refuse to
// status the work tree, core.worktree at the top hides the work tree's
// edits, a corrupted source makes every host step fail before it reaches
// the workspace, and a HEAD that is not a file makes git stop treating the
// folder as a repository.
//
//   - "code execution" (attacks 1, 2, 3, 7 of issue 12, and two of 5):
//     1. `[filter "x=y"] clean/smudge` in .git/config with `* filter=x=y` in
//     .git/info/attributes and .gitattributes, a second plain filter, a diff
//     driver (textconv, command) and diff.external, then tracked files
//     edited;
//     2. a nested repository committed as a gitlink whose own .git/config
//     defines a filter and core.fsmonitor, with a file edited in it;
//     3. log.showSignature=true, gpg.program (and gpg.openpgp/ssh.program)
//     set to a script in .git, and a commit carrying a gpgsig header,
//     written by hand with `git hash-object -t commit -w`;
//     5. .git/objects/info/alternates at another host repository's objects,
//     with the branch's head commit naming a blob only that repository
//     holds (host git reading the alternates would carry it into the
//     person's repository), and include.path to a host file that defines a
//     filter;
//     7. core.fsmonitor, core.sshCommand, core.pager, core.editor,
//     core.askPass, credential.helper, uploadpack.packObjectsHook, an ssh
//     remote, gc.auto=1, hooks (post-checkout, reference-transaction,
//     pre-auto-gc, post-index-change and more), and odd ref names: leading
//     dash, unicode, 200-character components, one shaped like a git
//     option (--output=<markers>/...), and, written as files, names git
//     refuses (space, tab, "..", ".lock", a control character).
//   - "submodules pointing out" (5): submodule libs/b's .git file points at
//     another host repository's .git and the branch records that
//     repository's head commit as libs/b's (a host fetch would carry its
//     history into the person's copy of the library); libs/c's git dir
//     sets core.worktree to that repository; symlinks to the source
//     repository and to / sit in the work tree.
//   - "symlinked submodule" (5 as the issue words it): after a commit in a
//     submodule, its folder is replaced by a symlink to another host
//     repository.
//   - "overwritten objects" (4): after a commit, every pack, pack index and
//     loose object of the clone is made writable and overwritten in place
//     (with `git clone --local` they are the source's own inodes). The
//     source has both a pack and loose objects.
//   - "fifos and huge files" (6): .git/index, a ref and a work-tree entry
//     become FIFOs (where the workspace cannot hold a FIFO, as a 9p share
//     refuses mknod, symlinks to a FIFO on the host), a tracked file
//     becomes a 100 MB single line, another a 2 GB sparse file, and 3,000
//     new files appear. `changes` must stay under 8 MiB of output.
//   - "huge pack": the agent commits a 300 MB random file. Merge must land
//     it within three minutes or refuse with a clear message, and neither
//     the CLI nor the engine may hold the pack in memory (peak RSS under
//     the pack's size, from the CLI's rusage and the engine's VmHWM).
//
// The `changes` verb is part of issue 12's Changes view; the test requires
// it to exit 0.

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

	seen map[string]bool // markers already reported
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
	h.t.Logf("%s: `sandbar %s` exited %d in %v", name, strings.Join(args, " "), r.code, time.Since(start).Round(time.Millisecond))
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
	deadline := time.Now().Add(limit)
	for {
		r := h.step("reading the log while the agent ran (the engine's watcher runs meanwhile)", "logs", id)
		if strings.Contains(r.out, text) {
			var said []string
			for _, l := range strings.Split(r.out, "\n") {
				if strings.HasPrefix(l, "hostile: ") {
					said = append(said, l)
				}
			}
			h.t.Logf("the agent said:\n%s", strings.Join(said, "\n"))
			return
		}
		if strings.Contains(r.out, "hostile: could not plant") {
			h.t.Fatalf("the hostile script failed inside the guest:\n%s\n%s", r.out, r.errOut)
		}
		s := h.session(id)
		if s.State == "stopped" || s.State == "failed" || s.State == "interrupted" {
			h.t.Fatalf("session %s is %s (%s) before its agent said %q:\n%s\n%s", id, s.State, s.Reason, text, clip(r.out), clip(r.errOut))
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the agent did not say %q within %v:\n%s\n%s", text, limit, clip(r.out), clip(r.errOut))
		}
		time.Sleep(500 * time.Millisecond)
	}
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
		{"stop", func() bool { _, hung := h.mustStep("stop", "stop", id); return !hung }},
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
		{"stop after restart", func() bool { _, hung := h.mustStep("stop after restart", "stop", id); return !hung }},
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

// stopEngineHard stops the engine, and kills it if SIGTERM is not enough
// (a hung engine is itself a failure).
func (h *hostileWorld) stopEngineHard() {
	pid := h.enginePID()
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		h.t.Errorf("the engine (pid %d) did not stop within 30s of SIGTERM: killed", pid)
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

// fileTree is every path under a folder with its type, mode, owner and
// content hash (or symlink target). Symlinks are not followed and only
// regular files are opened.
type fileTree map[string]string

func hashTree(t *testing.T, root string) fileTree {
	t.Helper()
	tree := fileTree{}
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			tree[rel] = "unreadable: " + err.Error()
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			tree[rel] = "unreadable: " + err.Error()
			return nil
		}
		desc := fi.Mode().String()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			desc += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		switch {
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				desc += " unreadable: " + err.Error()
				break
			}
			sum := sha256.New()
			_, err = io.Copy(sum, f)
			f.Close()
			desc += " " + hex.EncodeToString(sum.Sum(nil))
			if err != nil {
				desc += " read error: " + err.Error()
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		tree[rel] = desc
		return nil
	})
	return tree
}

// What merge may add to or change in the source repository's .git (and its
// submodules' git dirs under .git/modules): new objects, the session's
// branch with its reflog, FETCH_HEAD.
var (
	newObject   = regexp.MustCompile(`^\.git/(.*/)?objects/([0-9a-f]{2}(/[0-9a-f]{38})?|pack(/pack-[0-9a-f]{40}\.(pack|idx|rev))?)$`)
	fetchHead   = regexp.MustCompile(`^\.git/(.*/)?FETCH_HEAD$`)
	branchPaths = `^\.git/(.*/)?(logs/)?refs/heads/sandbar(/%s)?$|^\.git/(.*/)?logs(/refs(/heads)?)?$`
)

// compareTrees lists what differs between before and after; allowed says
// which paths may be new or changed.
func compareTrees(before, after fileTree, allowed func(path string, isNew bool) bool) []string {
	var diffs []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			diffs = append(diffs, "gone: "+p)
		case a != b && (allowed == nil || !allowed(p, false)):
			diffs = append(diffs, fmt.Sprintf("changed: %s (%s -> %s)", p, b, a))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok && (allowed == nil || !allowed(p, true)) {
			diffs = append(diffs, fmt.Sprintf("new: %s (%s)", p, a))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 30 {
		diffs = append(diffs[:30], fmt.Sprintf("... and %d more", len(diffs)-30))
	}
	return diffs
}

// repoState is what the source repository must keep across a session.
type repoState struct {
	tree fileTree
	refs string // every ref and its value, except sandbar/*
}

func (h *hostileWorld) repoState() repoState {
	h.t.Helper()
	var keep []string
	for _, l := range strings.Split(h.git("for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if !strings.HasPrefix(l, "refs/heads/sandbar/") {
			keep = append(keep, l)
		}
	}
	return repoState{tree: hashTree(h.t, h.repo), refs: strings.Join(keep, "\n")}
}

// checkRepos is the end of every case: no marker anywhere, the source
// repository and its submodules pass fsck, its bytes changed only where
// merge may change them, and the victim repository and host config file
// did not change at all.
func (h *hostileWorld) checkRepos(id string, before repoState, victimBefore, cfgBefore fileTree, subs ...string) {
	h.t.Helper()
	h.checkMarkers("by the end of the test")
	for _, p := range markersUnder(h.home, h.repo, h.victim) {
		h.t.Errorf("a marker file appeared at %s", p)
	}
	for _, dir := range append([]string{h.repo}, subs...) {
		ctx, cancel := context.WithTimeout(context.Background(), attackStepDeadline)
		cmd := exec.CommandContext(ctx, "git", "-C", dir, "fsck", "--full", "--no-progress")
		cmd.Env = h.env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			h.t.Errorf("git fsck --full in %s: %v\n%s", dir, err, clip(string(out)))
		}
	}
	branch := regexp.MustCompile(fmt.Sprintf(branchPaths, regexp.QuoteMeta(id)))
	after := h.repoState()
	if d := compareTrees(before.tree, after.tree, func(p string, isNew bool) bool {
		return branch.MatchString(p) || fetchHead.MatchString(p) || (isNew && newObject.MatchString(p))
	}); len(d) > 0 {
		h.t.Errorf("the source repository changed beyond branch sandbar/%s and new objects:\n%s", id, strings.Join(d, "\n"))
	}
	if after.refs != before.refs {
		h.t.Errorf("the source repository's refs other than sandbar/* changed:\nbefore:\n%s\nafter:\n%s", before.refs, after.refs)
	}
	if d := compareTrees(victimBefore, hashTree(h.t, h.victim), nil); len(d) > 0 {
		h.t.Errorf("another host repository (%s), which the agent pointed at, changed:\n%s", h.victim, strings.Join(d, "\n"))
	}
	if d := compareTrees(cfgBefore, hashTree(h.t, filepath.Dir(h.hostCfg)), nil); len(d) > 0 {
		h.t.Errorf("the host file the agent included changed:\n%s", strings.Join(d, "\n"))
	}
	if h.t.Failed() {
		h.logEngineWarnings()
	}
}

// The scripts. Each starts the same way: on restart it only waits; it
// fails loudly if a step that the case depends on cannot be planted; after
// planting it gives the host's watcher five seconds before "settled".
const (
	scriptHead = `set -u
if [ -e .hostile-planted ]; then echo "hostile: restarted"; exec sleep 3600; fi
: > .hostile-planted
fail() { echo "hostile: could not plant: $*"; exit 1; }
`
	scriptTail = `echo "hostile: planted"
sleep 5 # the host's watcher reacts meanwhile
echo "hostile: settled"
exec sleep 3600
`
)

// codeExecScript plants attacks 1, 2, 3 and 7, and alternates and
// include.path (5). Everything that needs git to work inside the guest
// comes first; the config and hooks that break the guest's own git last.
const codeExecScript = scriptHead + `
# Commits the branch carries: attributes naming the filters, and a nested
# repository recorded as a gitlink (2).
printf '* filter=x=y\n*.txt filter=plain diff=evil\n*.inc filter=inc\n' > .gitattributes
echo note > notes.txt
echo inc > x.inc
mkdir nested && (cd nested && git init -q && echo one > f && git add f && git commit -qm nested) || fail nested
git -c advice.addEmbeddedRepo=false add .gitattributes notes.txt x.inc nested || fail add
git commit -qm "attributes and a nested repository" || fail commit

# 3: a commit with a gpgsig header, written by hand. Its tree also names a
# blob only the victim repository holds (5: alternates).
tree=$( (git ls-tree HEAD; printf '100644 blob %s\tstolen.txt\n' "$VSECRET") | git mktree --missing) || fail mktree
signed=$(printf 'tree %s\nparent %s\nauthor Agent <agent@example.com> 1700000000 +0000\ncommitter Agent <agent@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEaG9zdGlsZSBhZ2VudA==\n =hstl\n -----END PGP SIGNATURE-----\n\na signed commit\n' "$tree" "$(git rev-parse HEAD)" | git hash-object -t commit -w --stdin) || fail gpgsig
git update-ref HEAD "$signed" || fail update-ref

# 7: odd ref names, first those git accepts, then files it would refuse.
long=$(head -c 200 /dev/zero | tr '\0' l)
for r in refs/heads/-dash "refs/heads/ünïcødé" "refs/heads/$long/$long" "refs/heads/--output=$M/refname-option-output" refs/tags/-dash-tag; do
	git update-ref "$r" "$signed" || echo "hostile: git refused ref $r"
done
for r in "with space" "$(printf 'tab\there')" "a..b" "x.lock" "ctrl$(printf '\001')"; do
	printf '%s\n' "$signed" > ".git/refs/heads/$r"
done

# 5: alternates at another host repository's objects.
mkdir -p .git/objects/info && printf '%s/.git/objects\n' "$VICTIM" > .git/objects/info/alternates

# 1, 3, 5, 7: commands in config (one included from a host file) and hooks.
printf '#!/bin/sh\ntouch %s/sandbar-pwned-gpg-program\nexit 0\n' "$M" > .git/fakegpg && chmod +x .git/fakegpg
cat >> .git/config <<EOF
[include]
	path = $HOSTCFG
[filter "x=y"]
	clean = touch $M/sandbar-pwned-filter-clean; cat
	smudge = touch $M/sandbar-pwned-filter-smudge; cat
[filter "plain"]
	clean = touch $M/sandbar-pwned-plain-filter-clean; cat
	smudge = touch $M/sandbar-pwned-plain-filter-smudge; cat
[diff "evil"]
	textconv = touch $M/sandbar-pwned-diff-textconv; cat
	command = touch $M/sandbar-pwned-diff-command
[diff]
	external = touch $M/sandbar-pwned-diff-external
[core]
	fsmonitor = touch $M/sandbar-pwned-core-fsmonitor
	sshCommand = touch $M/sandbar-pwned-core-sshcommand
	pager = touch $M/sandbar-pwned-core-pager
	editor = touch $M/sandbar-pwned-core-editor
	askPass = touch $M/sandbar-pwned-core-askpass
[credential]
	helper = !touch $M/sandbar-pwned-credential-helper
[log]
	showSignature = true
[gpg]
	program = .git/fakegpg
[gpg "openpgp"]
	program = .git/fakegpg
[gpg "ssh"]
	program = .git/fakegpg
[gc]
	auto = 1
	autoDetach = false
[uploadpack]
	packObjectsHook = touch $M/sandbar-pwned-packobjectshook
[remote "origin"]
	url = ssh://sandbar-pwned.invalid/x
EOF
printf '* filter=x=y\n*.inc filter=inc\n' > .git/info/attributes
mkdir -p .git/hooks
for h in post-checkout reference-transaction pre-auto-gc post-index-change post-merge post-commit pre-commit post-rewrite push-to-checkout fsmonitor-watchman; do
	printf '#!/bin/sh\ntouch %s/sandbar-pwned-hook-%s\nexit 0\n' "$M" "$h" > .git/hooks/$h && chmod +x .git/hooks/$h
done

# 2: the nested repository's own config and attributes.
cat >> nested/.git/config <<EOF
[filter "n"]
	clean = touch $M/sandbar-pwned-nested-filter; cat
[core]
	fsmonitor = touch $M/sandbar-pwned-nested-fsmonitor
EOF
mkdir -p nested/.git/info && echo '* filter=n' > nested/.git/info/attributes

# Edits the filters apply to.
echo two > nested/f # same size as what the nested repository holds
echo changed >> notes.txt
echo changed >> x.inc
echo "edited by the agent" >> README.md
` + scriptTail

// submodulesScript is attack 5 through submodules' git dirs: libs/b's
// .git points at another host repository's, and the branch records that
// repository's head commit as libs/b's (a host fetch from libs/b would
// carry its history into the person's copy of the library); libs/c's git
// dir sets core.worktree to that repository; symlinks name the source
// repository and /.
const submodulesScript = scriptHead + `
git update-index --cacheinfo "160000,$VHEAD,libs/b" && git commit -qm "bump libs/b" || fail gitlink
printf 'gitdir: %s/.git\n' "$VICTIM" > libs/b/.git || fail gitdir
cdir=$(cd libs/c && git rev-parse --absolute-git-dir) && printf '[core]\n\tworktree = %s\n' "$VICTIM" >> "$cdir/config" || fail worktree
ln -s "$SRC" source-link && ln -s / root-link || fail symlinks
echo "edited by the agent" >> README.md
` + scriptTail

// symlinkScript is attack 5 as issue 12 words it: after a commit in a
// submodule, its folder is replaced by a symlink to another host
// repository.
const symlinkScript = scriptHead + `
(cd libs/a && echo work > work.txt && git add work.txt && git commit -qm "lib work") || fail "submodule commit"
git add libs/a && git commit -qm "bump lib" || fail commit
rm -rf libs/a && ln -s "$VICTIM" libs/a || fail symlink
` + scriptTail

// objectsScript is attack 4: after a commit, every pack, index and loose
// object of the clone is made writable and overwritten in place.
const objectsScript = scriptHead + `
echo work > work.txt && git add work.txt && git commit -qm "work before the corruption" || fail commit
chmod -R u+w .git/objects || fail chmod
n=0
for f in $(find .git/objects -type f \( -name '*.pack' -o -name '*.idx' -o -path '*/objects/[0-9a-f][0-9a-f]/*' \)); do
	printf 'garbage from the agent garbage from the agent' | dd of="$f" bs=1 seek=12 conv=notrunc 2>/dev/null && n=$((n+1))
done
echo "hostile: overwrote $n object files"
[ "$n" -gt 0 ] || fail "no object files to overwrite"
` + scriptTail

// fifoScript is attack 6: FIFOs where git expects files (a symlink to a
// FIFO on the host where the workspace cannot hold one: a 9p share refuses
// mknod), and huge outputs. HEAD is left alone: as a FIFO or a symlink it
// makes git stop treating the folder as a repository, which would hide the
// rest.
const fifoScript = scriptHead + `
echo work > work.txt; echo small > oneline.txt; echo small > big.bin
git add work.txt oneline.txt big.bin && git commit -qm "work" || fail commit
head -c 100000000 /dev/zero | tr '\0' a > oneline.txt || fail oneline
truncate -s 2G big.bin || fail sparse
mkdir many && (cd many && seq 1 3000 | xargs touch) || fail many
fifo() {
	rm -f "$1"
	if mkfifo "$1" 2>/dev/null; then echo "hostile: made FIFO $1"
	elif ln -s "$HOSTFIFO" "$1"; then echo "hostile: no FIFO here; linked $1 to the host's FIFO"
	else fail "fifo $1"; fi
}
fifo pipe-in-tree
fifo .git/refs/heads/fifo-ref
fifo .git/index
` + scriptTail

// hugeScript is the huge-pack variant: one commit with a 300 MB random
// file (stored uncompressed: the point is its size, not zlib's speed under
// emulation).
const hugeScript = `set -u
head -c 300000000 /dev/urandom > huge.bin || { echo "hostile: could not plant: urandom"; exit 1; }
git -c core.looseCompression=0 -c core.compression=0 add huge.bin && git commit -qm "a 300 MB file" || { echo "hostile: could not plant: commit"; exit 1; }
echo "hostile: committed"
`

const hugeSize = 300000000

// hostileCase is one session with planted tricks: setup prepares the
// source repository (before the script is committed), checkChanges looks
// at `changes` output, after runs extra checks before checkRepos.
type hostileCase struct {
	name         string
	script       string
	disk         string
	setup        func(h *hostileWorld)
	checkChanges func(h *hostileWorld, r stepResult)
	after        func(h *hostileWorld)
	subs         []string // submodules to fsck, relative to the source
}

// TestHostileAgent: see the file comment.
func TestHostileAgent(t *testing.T) {
	cases := []hostileCase{{
		name:   "code execution",
		script: codeExecScript,
		checkChanges: func(h *hostileWorld, r stepResult) {
			if !strings.Contains(r.out, "README.md") {
				h.t.Errorf("changes does not list README.md, which the agent edited:\n%s", clip(r.out))
			}
		},
		after: func(h *hostileWorld) {
			if h.hasObject(h.repo, h.secret) {
				h.t.Errorf("the victim repository's blob %s reached the source repository: host git followed the agent's alternates", h.secret)
			}
		},
	}, {
		name:   "submodules pointing out",
		script: submodulesScript,
		setup:  func(h *hostileWorld) { h.addSubmodules("libs/b", "libs/c") },
		after: func(h *hostileWorld) {
			if h.hasObject(filepath.Join(h.repo, "libs", "b"), h.vhead) {
				h.t.Errorf("the victim repository's commit %s reached the source's libs/b: host git followed the agent's gitdir: line", h.vhead)
			}
		},
		subs: []string{"libs/b", "libs/c"},
	}, {
		name:   "symlinked submodule",
		script: symlinkScript,
		setup:  func(h *hostileWorld) { h.addSubmodules("libs/a") },
		subs:   []string{"libs/a"},
	}, {
		name:   "overwritten objects",
		script: objectsScript,
		setup: func(h *hostileWorld) {
			// Both a pack and loose objects, as a real repository has:
			// the clone may share either.
			os.WriteFile(filepath.Join(h.repo, "packed.txt"), []byte("in a pack\n"), 0o644)
			h.git("add", "packed.txt")
			h.git("commit", "-qm", "packed")
			h.git("repack", "-adq")
		},
	}, {
		name:   "fifos and huge files",
		script: fifoScript,
		disk:   "3",
		checkChanges: func(h *hostileWorld, r stepResult) {
			if len(r.out) > 8<<20 {
				h.t.Errorf("changes printed %d bytes: the 100 MB line or the 2 GB file went through whole", len(r.out))
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileWorld(t)
			if c.setup != nil {
				c.setup(h)
			}
			h.commitScript(c.script) // its objects stay loose
			before, victim, cfg := h.repoState(), hashTree(t, h.victim), hashTree(t, filepath.Dir(h.hostCfg))
			disk := c.disk
			if disk == "" {
				disk = "1"
			}
			id := h.startID("--repo", h.repo, "--agent", "sh hostile.sh", "--cpus", "1", "--memory", "768", "--disk", disk, "--no-network")
			h.waitPlanted(id, "hostile: settled", 4*time.Minute)
			var check func(stepResult)
			if c.checkChanges != nil {
				check = func(r stepResult) { c.checkChanges(h, r) }
			}
			h.hostSteps(id, check)
			if c.after != nil {
				c.after(h)
			}
			var subs []string
			for _, s := range c.subs {
				subs = append(subs, filepath.Join(h.repo, filepath.FromSlash(s)))
			}
			h.checkRepos(id, before, victim, cfg, subs...)
		})
	}

	t.Run("huge pack", func(t *testing.T) {
		t.Parallel()
		h := newHostileWorld(t)
		h.commitScript(hugeScript)
		before, victim, cfg := h.repoState(), hashTree(t, h.victim), hashTree(t, filepath.Dir(h.hostCfg))

		start := h.stepWithin(6*time.Minute, "start --wait (the agent writes and commits 300 MB)",
			"start", "--repo", h.repo, "--agent", "sh hostile.sh", "--cpus", "1", "--memory", "1024", "--disk", "3", "--no-network", "--wait")
		if start.hung || start.code != 0 || !strings.Contains(start.out, "hostile: committed") {
			t.Fatalf("the agent did not commit its 300 MB file: exit %d\n%s\n%s", start.code, clip(start.out), clip(start.errOut))
		}
		ss := h.ls()
		if len(ss) != 1 {
			t.Fatalf("ls: %+v", ss)
		}
		id := ss[0].ID
		merge := h.stepWithin(3*time.Minute, "merge of a 300 MB pack", "merge", id)
		switch {
		case merge.hung:
		case merge.code == 0:
			if got := h.git("cat-file", "-s", ss[0].Branch+":huge.bin"); got != strconv.Itoa(hugeSize) {
				t.Errorf("merge succeeded but %s:huge.bin is %s bytes, want %d", ss[0].Branch, got, hugeSize)
			}
		default:
			msg := strings.TrimSpace(merge.errOut)
			if msg == "" || strings.Count(msg, "\n") > 2 || strings.Contains(msg, "goroutine ") {
				t.Errorf("merge refused the huge pack without a clear message: exit %d\n%s", merge.code, clip(merge.errOut))
			}
		}
		t.Logf("merge: exit %d, the CLI's peak RSS %d MiB: %s%s", merge.code, merge.maxRSS>>20, merge.out, merge.errOut)
		if merge.maxRSS >= hugeSize {
			t.Errorf("sandbar merge peaked at %d MiB of memory: it held the %d MB pack", merge.maxRSS>>20, hugeSize/1000000)
		}
		if pid := h.enginePID(); pid > 0 {
			if hwm, ok := vmHWM(pid); !ok {
				t.Errorf("cannot read the engine's (pid %d) peak RSS from /proc", pid)
			} else {
				t.Logf("the engine's peak RSS: %d MiB", hwm>>20)
				if hwm >= hugeSize {
					t.Errorf("the engine peaked at %d MiB of memory: it held the %d MB pack", hwm>>20, hugeSize/1000000)
				}
			}
		} else {
			t.Errorf("no engine running after merge: cannot read its peak RSS")
		}
		if !merge.hung {
			h.mustStep("rm --force", "rm", "--force", id)
		}
		h.checkRepos(id, before, victim, cfg)
	})
}

// logEngineWarnings shows the end of the engine's log, to help read a
// failure.
func (h *hostileWorld) logEngineWarnings() {
	b, err := os.ReadFile(filepath.Join(h.home, "engine.log"))
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	h.t.Logf("the end of the engine's log:\n%s", clip(strings.Join(lines, "\n")))
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
