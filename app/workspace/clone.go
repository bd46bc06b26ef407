package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CloneOptions says what to clone where.
type CloneOptions struct {
	// Source is the person's repository, from Resolve.
	Source Repo
	// Dest is the folder the clone goes in; it must not exist or be empty.
	Dest string
	// Branch is created in the clone at Base and checked out, e.g.
	// "sandbar/<id>".
	Branch string
	// Base is a branch, tag or commit of Source; "" means Source's current
	// branch, or its HEAD commit when detached.
	Base string
	// Progress, if set, is called as the clone goes: with Phase "Cloning"
	// and "Checking out" at 0 when each step starts, with git's own meter
	// lines ("Receiving objects", "Updating files") when git prints them,
	// and with Phase "Done" at 100 at the end. A local clone links objects
	// rather than transferring them, so git itself often prints nothing.
	// Calls come one at a time, all before Clone returns.
	Progress func(Progress)
}

// Progress is one reading of a clone's progress.
type Progress struct {
	Phase   string
	Percent int
}

// CloneInfo describes a finished clone.
type CloneInfo struct {
	// BaseCommit is the commit Branch was created at.
	BaseCommit string
	// Took is how long the whole clone took.
	Took time.Duration
	// Copied lists the files the include lists brought over, relative to
	// the root, slash-separated.
	Copied []string
	// Skipped lists include-list matches left behind, each with why
	// ("config/key -> /etc/key: symlink out of the repository").
	Skipped []string
	// Submodules lists the submodules checked out from Source's copies,
	// by path ("lib/core", and "lib/core/vendor/x" for one inside it).
	Submodules []string
	// SkippedSubmodules lists submodules left empty, each with why and
	// what to do ("lib/x: not checked out in ...: run `git submodule
	// update --init` there, then start a new session").
	SkippedSubmodules []string
	// LFSPointers lists the files Git LFS manages (filter=lfs), which
	// the clone holds as pointer files: Clone brings no LFS content.
	LFSPointers []string
}

// Phases Clone reports itself, around git's own meter lines.
const (
	PhaseCloning     = "Cloning"
	PhaseCheckingOut = "Checking out"
	PhaseSubmodules  = "Checking out submodules"
	PhaseCopying     = "Copying included files"
	PhaseDone        = "Done"
)

// Clone makes Dest a clone of Source with Branch checked out at Base.
//
// Objects are hardlinked (git clone --local), so the time does not grow with
// the repository's history; only the checked-out files are written.
// The clone's "origin" is Source's own remote, so an agent given a token
// can push, and "source" is Source's folder (origin too, when Source has
// no remote). Ignored or untracked files named in Source's
// .sandbarinclude or .worktreeinclude are copied and excluded in the
// clone. Submodules Source has checked out are checked out in the clone
// from Source's copies, at the commits the base records (see
// cloneSubmodules); none is fetched. Nothing in Source changes. On failure, whatever Clone made in
// Dest is removed and Dest is left as it was.
func Clone(ctx context.Context, o CloneOptions) (CloneInfo, error) {
	start := time.Now()
	src := o.Source.Root
	if src == "" {
		return CloneInfo{}, errors.New("clone: no source repository given: resolve the folder first")
	}
	if o.Dest == "" {
		return CloneInfo{}, errors.New("clone: no destination folder given")
	}
	dest, err := filepath.Abs(o.Dest)
	if err != nil {
		return CloneInfo{}, fmt.Errorf("clone into %s: %w", o.Dest, err)
	}
	if o.Branch == "" {
		return CloneInfo{}, errors.New("clone: no branch name given: name the session's branch, e.g. sandbar/<id>")
	}
	if _, err := git(ctx, "", "check-ref-format", "--branch", o.Branch); err != nil {
		if ctx.Err() != nil {
			return CloneInfo{}, err
		}
		return CloneInfo{}, fmt.Errorf("%q is not a valid branch name: choose another", o.Branch)
	}

	base := o.Base
	rev := base
	if rev == "" {
		rev = "HEAD"
	}
	baseCommit, err := gitLine(ctx, src, "rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return CloneInfo{}, err
		}
		if base == "" {
			return CloneInfo{}, refuse(src+" has no commits yet: commit something first", ErrEmptyRepo)
		}
		return CloneInfo{}, fmt.Errorf("base %s is not a branch, tag or commit in %s: pick one that `git log` there shows", base, src)
	}

	created, err := checkDest(dest)
	if err != nil {
		return CloneInfo{}, err
	}
	info, err := clone(ctx, o, src, dest, baseCommit)
	if err != nil {
		cleanDest(dest, created)
		return CloneInfo{}, err
	}
	info.Took = time.Since(start)
	return info, nil
}

func clone(ctx context.Context, o CloneOptions, src, dest, baseCommit string) (CloneInfo, error) {
	report := func(phase string, pct int) {
		if o.Progress != nil {
			o.Progress(Progress{Phase: phase, Percent: pct})
		}
	}
	report(PhaseCloning, 0)
	if err := gitProgress(ctx, "", o.Progress,
		"clone", "--local", "--no-checkout", "--progress", "--origin", "origin", "--", src, dest); err != nil {
		return CloneInfo{}, fmt.Errorf("clone %s: %w", src, err)
	}

	report(PhaseCheckingOut, 0)
	// The clone's own default branch stays as git made it; the session's
	// branch is forced to the base because the clone is ours to shape.
	if err := gitProgress(ctx, dest, o.Progress,
		"-c", "checkout.workers=0", "checkout", "--progress", "--no-track", "-B", o.Branch, baseCommit); err != nil {
		return CloneInfo{}, fmt.Errorf("check out %s at %s: %w", o.Branch, short(baseCommit), err)
	}

	if o.Source.Remote != "" {
		if _, err := git(ctx, dest, "remote", "set-url", "origin", o.Source.Remote); err != nil {
			return CloneInfo{}, fmt.Errorf("set origin to %s: %w", o.Source.Remote, err)
		}
	}
	if _, err := git(ctx, dest, "remote", "add", "source", src); err != nil {
		return CloneInfo{}, fmt.Errorf("add remote source: %w", err)
	}

	subs, subsSkipped, err := cloneSubmodules(ctx, src, dest, "", 0, o.Progress)
	if err != nil {
		return CloneInfo{}, fmt.Errorf("check out submodules: %w", err)
	}
	lfs, err := lfsPointers(ctx, dest)
	if err != nil {
		return CloneInfo{}, err
	}

	report(PhaseCopying, 0)
	copied, skipped, err := copyIncluded(ctx, src, dest)
	if err != nil {
		return CloneInfo{}, err
	}
	report(PhaseDone, 100)
	return CloneInfo{BaseCommit: baseCommit, Copied: copied, Skipped: skipped, Submodules: subs, SkippedSubmodules: subsSkipped, LFSPointers: lfs}, nil
}

// checkDest refuses a Dest that holds anything. It returns the topmost
// folder the clone will create (Dest or one of its parents), or "" when
// Dest exists already (empty), so a failed clone can put things back.
func checkDest(dest string) (created string, err error) {
	ents, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(dest); lerr == nil {
			return "", fmt.Errorf("%s is a file or a broken link: choose a folder that does not exist yet", dest)
		}
		created = dest
		for p := filepath.Dir(dest); p != filepath.Dir(p); p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
			created = p
		}
		return created, nil
	case err != nil:
		if fi, serr := os.Stat(dest); serr == nil && !fi.IsDir() {
			return "", fmt.Errorf("%s is a file: choose a folder that does not exist yet", dest)
		}
		return "", fmt.Errorf("%s cannot be read: %w: check its permissions", dest, err)
	case len(ents) > 0:
		return "", fmt.Errorf("%s already exists and is not empty: remove it or choose another folder", dest)
	}
	return "", nil
}

// cleanDest removes what a failed clone made: the folders it created, or
// else only Dest's contents.
func cleanDest(dest, created string) {
	if created != "" {
		_ = os.RemoveAll(created)
		return
	}
	ents, _ := os.ReadDir(dest)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dest, e.Name()))
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
