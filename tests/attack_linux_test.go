//go:build linux

package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
//
// The cases share their harness (attack_world_linux_test.go: the world, each
// host step under its deadline, the markers), the scripts that plant each
// class of tricks (attack_scripts_linux_test.go) and the checks of the
// repositories afterwards (attack_checks_linux_test.go); the table of cases
// stays here, in one test, so its groups keep running in parallel.

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
			// 8 minutes: planting takes ~70 s alone, and CI ran it past 4
			// beside the guest image's build, six VMs sharing 2 cores.
			h.waitPlanted(id, "hostile: settled", 8*time.Minute)
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
		// The random bytes the agent wrote to its file are binary: the
		// live view says so once and shows none of them (it printed 1.2
		// MB of them when it followed the file as text).
		if len(start.out) > 64<<10 {
			t.Errorf("start --wait printed %d KiB while the agent wrote random bytes to a file: the live view showed binary data\n%s", len(start.out)>>10, clip(start.out))
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
