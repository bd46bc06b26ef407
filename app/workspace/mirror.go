package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Mirror is the git repository Sandbar owns for one project: a bare
// repository that only Sandbar writes and configures. The source's
// history is fetched into it (objects are copied, never hardlinked), base
// disks are built from it, and a session's work comes back into it as
// data (see ImportSave) before anything reaches the person's repository.
// No agent ever writes a file in it, so host-side git may run there.
type Mirror struct {
	// Dir is the bare repository's folder.
	Dir string
	// Limits bound what a save's packs may inflate to (see checkPack);
	// a zero field is DefaultPackLimits'.
	Limits PackLimits
	// env is added to the environment of the git commands that read it
	// through m.git: a quarantine's object directory (see ImportSave).
	env []string
}

// git runs a git command in the mirror, with m.env.
func (m *Mirror) git(ctx context.Context, args ...string) (string, error) {
	return gitEnvInput(ctx, m.Dir, m.env, nil, args...)
}

// Refs in a Mirror.
const (
	// sourceRefs holds the source repository's branches, tags and HEAD as
	// last fetched.
	sourceRefs = "refs/sandbar/source/"
	// sessionRefs holds each session's saved work:
	// refs/sandbar/sessions/<id>/branch, .../snapshot, .../head,
	// .../modules/<key> (each submodule's HEAD), .../autocommit (the
	// commit CommitSnapshot made of its uncommitted work) and
	// .../saves/<n>/{branch,snapshot} (earlier saves a later one does not
	// reach: see keepEarlierSave).
	sessionRefs = "refs/sandbar/sessions/"
)

// mirrorConfig is the whole configuration Sandbar gives its repository.
// Objects that arrive are checked as a server checks a push.
var mirrorConfig = [][2]string{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"transfer.fsckObjects", "true"},
	{"fetch.fsckObjects", "true"},
	{"receive.fsckObjects", "true"},
	{"gc.autoDetach", "false"},
	{"core.logAllRefUpdates", "false"},
	// Merge fetches submodule commits by id.
	{"uploadpack.allowAnySHA1InWant", "true"},
}

// OpenMirror opens, or creates, Sandbar's repository at dir.
func OpenMirror(ctx context.Context, dir string) (*Mirror, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("Sandbar's repository %s: %w", dir, err)
	}
	m := &Mirror{Dir: abs}
	if fi, err := os.Lstat(filepath.Join(abs, "HEAD")); err == nil && fi.Mode().IsRegular() {
		// A repository made by an older Sandbar gets the settings added
		// since (the last one names them all).
		last := mirrorConfig[len(mirrorConfig)-1]
		if v, _ := gitLine(ctx, abs, "config", "--get", last[0]); v != last[1] {
			for _, kv := range mirrorConfig {
				if _, err := git(ctx, abs, "config", kv[0], kv[1]); err != nil {
					return nil, fmt.Errorf("configure Sandbar's repository %s: %w", abs, err)
				}
			}
		}
		return m, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("Sandbar's repository %s: %w", abs, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(abs), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), ".repo-")
	if err != nil {
		return nil, fmt.Errorf("create Sandbar's repository in %s: %w", filepath.Dir(abs), err)
	}
	defer os.RemoveAll(tmp)
	// An empty template: no sample hooks, no description, nothing of the
	// person's init.templateDir.
	empty := filepath.Join(tmp, ".template")
	if err := os.Mkdir(empty, 0o700); err != nil {
		return nil, err
	}
	repo := filepath.Join(tmp, "repo.git")
	if _, err := git(ctx, "", "init", "-q", "--bare", "--template="+empty, repo); err != nil {
		return nil, fmt.Errorf("create Sandbar's repository %s: %w", abs, err)
	}
	for _, kv := range mirrorConfig {
		if _, err := git(ctx, repo, "config", kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("configure Sandbar's repository %s: %w", abs, err)
		}
	}
	if err := os.Rename(repo, abs); err != nil {
		if _, serr := os.Lstat(filepath.Join(abs, "HEAD")); serr == nil {
			return m, nil // another process made it first
		}
		return nil, fmt.Errorf("create Sandbar's repository %s: %w", abs, err)
	}
	return m, nil
}

// Fetch brings the source's branches, tags and HEAD into the mirror
// (only what is new is copied) and returns the commit rev names in the
// source ("" for HEAD). The source is the person's own repository: git
// runs there only as upload-pack, reading.
// progress, if set, hears git's meter.
func (m *Mirror) Fetch(ctx context.Context, src Repo, rev string, progress func(Progress)) (string, error) {
	if src.Root == "" {
		return "", errors.New("fetch: no source repository given: resolve the folder first")
	}
	name := rev
	if name == "" {
		name = "HEAD"
	}
	commit, err := gitLine(ctx, src.Root, "rev-parse", "-q", "--verify", "--end-of-options", name+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		if rev == "" {
			return "", refuse(src.Root+" has no commits yet: commit something first", ErrEmptyRepo)
		}
		return "", fmt.Errorf("%q is not a branch, tag or commit of %s: name one that exists", rev, src.Root)
	}
	if m.hasCommit(ctx, commit) {
		return commit, nil
	}
	specs := []string{"+HEAD:" + sourceRefs + "HEAD", "+refs/heads/*:" + sourceRefs + "heads/*", "+refs/tags/*:" + sourceRefs + "tags/*"}
	fetch := func(prune bool, specs ...string) error {
		args := []string{"-c", "gc.auto=0", "fetch", "--progress", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"}
		if prune {
			args = append(args, "--prune")
		}
		return gitProgress(ctx, m.Dir, progress, append(append(args, "--end-of-options", src.Root), specs...)...)
	}
	if err := fetch(true, specs...); err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("copy the history of %s into Sandbar's repository: %s: check the repository with `git fsck`", src.Root, gitMessage(err))
	}
	if !m.hasCommit(ctx, commit) {
		// Not reachable from any branch or tag: fetch it by name.
		if err := fetch(false, commit); err != nil || !m.hasCommit(ctx, commit) {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("commit %s of %s is on no branch or tag: create a branch at it and start again", short(commit), src.Root)
		}
	}
	return commit, nil
}

func (m *Mirror) hasCommit(ctx context.Context, c string) bool {
	t, err := m.git(ctx, "cat-file", "-t", "--end-of-options", c)
	return err == nil && strings.TrimSpace(t) == "commit"
}

// sessionRef is where a session's saved branch ("branch") or snapshot
// of uncommitted work ("snapshot") lives in the mirror.
func sessionRef(id, which string) string { return sessionRefs + id + "/" + which }

// validSessionID keeps session ids to what a ref name may safely hold.
func validSessionID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("session id %q is not valid", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("session id %q is not valid", id)
		}
	}
	return nil
}

// Forget deletes a session's refs from the mirror (its branch, snapshot,
// head and submodules); its objects go with the next gc.
func (m *Mirror) Forget(ctx context.Context, id string) error {
	if err := validSessionID(id); err != nil {
		return err
	}
	refs, err := git(ctx, m.Dir, "for-each-ref", "--format=%(refname)", sessionRefs+id+"/")
	if err != nil {
		return fmt.Errorf("read the refs of session %s in %s: %w", id, m.Dir, err)
	}
	var tx strings.Builder
	for _, ref := range strings.Fields(refs) {
		fmt.Fprintf(&tx, "delete %s\n", ref)
	}
	if tx.Len() == 0 {
		return nil
	}
	if _, err := gitInput(ctx, m.Dir, strings.NewReader(tx.String()), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("forget session %s in %s: %w", id, m.Dir, err)
	}
	_ = m.Maintain(ctx) // a failure leaves more packs, consolidated next time
	return nil
}

// isHex reports whether s is a full object id.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// packLimits are the bounds on a save's packs: Limits, or the defaults.
func (m *Mirror) packLimits() PackLimits {
	l := DefaultPackLimits
	if m.Limits.MaxObject > 0 {
		l.MaxObject = m.Limits.MaxObject
	}
	if m.Limits.MaxInflated > 0 {
		l.MaxInflated = m.Limits.MaxInflated
	}
	if m.Limits.MaxObjects > 0 {
		l.MaxObjects = m.Limits.MaxObjects
	}
	return l
}

// IsAncestor reports whether commit a is in commit b's history in
// Sandbar's repository of the project (a commit it lacks is not).
func (m *Mirror) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	if !isHex(a) || !isHex(b) {
		return false, nil
	}
	return isAncestor(ctx, m.Dir, a, b)
}
