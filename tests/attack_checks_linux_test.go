//go:build linux

package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
)

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
