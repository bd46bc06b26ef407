// Package workspace gives a session its own copy of a person's repository
// and brings the work back, without the host ever running git, or opening
// a file, where the agent can write.
//
// Sandbar keeps its own bare repository per project (Mirror), which only
// it writes and configures. The person's history is fetched into it
// (copied, never hardlinked), and a read-only ext4 base disk is built
// from it per commit (BuildBase): a checkout with its .git, made from the
// objects as stored, so nothing the repository configures runs. Each
// session's VM mounts that disk under a copy-on-write layer of its own.
// The agent's work comes back as data: a pack of its branch and a
// snapshot of its working tree made in the VM (SaveScript), checked by
// git index-pack --strict and taken into the mirror (ImportSave); Merge
// then fetches the branch from the mirror into the person's repository
// without touching its working tree, index, HEAD or any other branch.
// While a session runs, its changes are read by running git inside its
// VM (Status with a Runner); afterwards, from the mirror (SavedStatus).
//
// Everything here drives the real git command line, each call with a
// deadline; there is no Go git library, so what a session sees is what
// `git` in a terminal sees. The package does not know about sessions, VMs
// or the store: the caller chooses the paths, ids and branch names.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Errors Resolve wraps, checked with errors.Is.
var (
	// ErrNotRepo: the folder is not inside a git work tree (or is a file).
	ErrNotRepo = errors.New("not a git repository")
	// ErrBareRepo: the folder is a bare repository, with no working tree.
	ErrBareRepo = errors.New("bare repository")
	// ErrNotTrusted: git refuses the repository because another user
	// owns it (safe.directory).
	ErrNotTrusted = errors.New("repository owned by another user")
	// ErrEmptyRepo: the repository has no commits to branch from.
	ErrEmptyRepo = errors.New("repository has no commits")
	// ErrOldGit: the installed git lacks something this package uses.
	ErrOldGit = errors.New("git is too old")
)

// MinGitVersion is the oldest git this package works with
// (fetch --no-write-fetch-head arrived in 2.29).
const MinGitVersion = "2.29.0"

// refusal is an error a person reads as is, which still answers errors.Is
// for the sentinels it stands for.
type refusal struct {
	msg   string
	kinds []error
}

func refuse(msg string, kinds ...error) error { return &refusal{msg: msg, kinds: kinds} }

func (e *refusal) Error() string   { return e.msg }
func (e *refusal) Unwrap() []error { return e.kinds }

// Repo is a git work tree as a person gave it to Sandbar.
type Repo struct {
	// Root is the top level of the work tree, as git reports it.
	Root string
	// Name is Root's last element, for display.
	Name string
	// Branch is the checked-out branch, "" when HEAD is detached.
	Branch string
	// Head is the commit HEAD points at.
	Head string
	// Subdir is the folder that was given, relative to Root; "" when the
	// folder was Root itself. A caller tells the person the whole
	// repository was taken.
	Subdir string
	// Remote is the URL of the remote "origin", "" if there is none, with
	// any password or token written into it removed: secrets reach a
	// session only through its environment.
	Remote string
}

// Resolve finds the repository that holds path, which may be any folder
// inside a work tree. It refuses, with an error that says what to do, a
// missing path, a file, a folder outside any repository (ErrNotRepo), a
// bare repository (ErrBareRepo) and one with no commits (ErrEmptyRepo).
func Resolve(ctx context.Context, path string) (Repo, error) {
	if path == "" {
		return Repo{}, refuse("no folder given: name a repository's folder", ErrNotRepo)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Repo{}, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Repo{}, refuse(abs+" does not exist: check the path", ErrNotRepo, fs.ErrNotExist)
	case err != nil:
		return Repo{}, fmt.Errorf("%s cannot be read: %w: check its permissions", abs, err)
	case !fi.IsDir():
		return Repo{}, refuse(abs+" is a file, not a folder: give the repository's folder", ErrNotRepo)
	}

	out, err := gitLine(ctx, abs, "rev-parse", "--is-bare-repository", "--is-inside-git-dir")
	if err != nil {
		if ctx.Err() != nil {
			return Repo{}, err
		}
		msg := gitMessage(err)
		if strings.Contains(msg, "dubious ownership") {
			return Repo{}, refuse(fmt.Sprintf("%s belongs to another user and git refuses it: run `git config --global --add safe.directory '%s'` if you trust it", abs, abs), ErrNotTrusted)
		}
		if errors.Is(err, ErrNoGit) {
			return Repo{}, err
		}
		return Repo{}, refuse(abs+" is not in a git repository: give the folder that holds .git, or run `git init` there", ErrNotRepo)
	}
	flags := strings.Split(out, "\n")
	if len(flags) >= 1 && flags[0] == "true" {
		return Repo{}, refuse(abs+" is a bare repository, with no working tree: give a clone of it", ErrBareRepo)
	}
	if len(flags) >= 2 && flags[1] == "true" {
		return Repo{}, refuse(abs+" is inside a repository's .git folder: give the folder that holds .git", ErrNotRepo)
	}

	out, err = gitLine(ctx, abs, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return Repo{}, refuse(abs+" is not in a git work tree ("+gitMessage(err)+"): give the folder that holds .git", ErrNotRepo)
	}
	top, prefix, _ := strings.Cut(out, "\n")
	r := Repo{
		Root:   filepath.FromSlash(top),
		Subdir: filepath.FromSlash(strings.TrimSuffix(prefix, "/")),
	}
	r.Name = filepath.Base(r.Root)

	r.Head, err = gitLine(ctx, r.Root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return Repo{}, err
		}
		return Repo{}, refuse(r.Root+" has no commits yet: commit something first", ErrEmptyRepo)
	}
	if b, err := gitLine(ctx, r.Root, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		r.Branch = b
	} else if ctx.Err() != nil {
		return Repo{}, err
	}
	if u, err := gitLine(ctx, r.Root, "remote", "get-url", "origin"); err == nil {
		r.Remote = redactURL(u)
	} else if ctx.Err() != nil {
		return Repo{}, err
	}
	return r, nil
}

// redactURL drops the password from a URL like
// https://user:token@host/repo.git; scp-style and local remotes carry none.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// GitIdentity returns user.name and user.email as git would use them for
// a commit in root (global config when root is ""); each is "" if unset.
func GitIdentity(ctx context.Context, root string) (name, email string) {
	name, _ = gitLine(ctx, root, "config", "--get", "user.name")
	email, _ = gitLine(ctx, root, "config", "--get", "user.email")
	return name, email
}

// GitVersion returns the installed git's version ("2.39.5"). The error
// wraps ErrNoGit when there is no git, and ErrOldGit (with the version
// still returned) when it is older than MinGitVersion.
func GitVersion(ctx context.Context) (string, error) {
	out, err := gitLine(ctx, "", "version")
	if err != nil {
		return "", err
	}
	// "git version 2.39.5 (Apple Git-154)"
	f := strings.Fields(strings.TrimPrefix(out, "git version "))
	if len(f) == 0 {
		return "", fmt.Errorf("git version printed %q: reinstall git", out)
	}
	v := f[0]
	if versionLess(v, MinGitVersion) {
		return v, refuse(fmt.Sprintf("git %s is too old: Sandbar needs %s or newer; install a newer git", v, MinGitVersion), ErrOldGit)
	}
	return v, nil
}

// versionLess compares dotted versions numerically ("2.9" < "2.29");
// anything after the numbers ("2.39.5.windows.1", "2.40.0-rc1") is ignored.
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func versionParts(v string) []int {
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// Progress is one reading of long work's progress: a phase ("Copying
// history", "Building the workspace disk", git's own meter lines such as
// "Receiving objects") and how far it is, 0–100.
type Progress struct {
	Phase   string
	Percent int
}

// PhaseDone is the last Progress of a finished piece of work.
const PhaseDone = "Done"

// short abbreviates a commit for messages.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// GitDirs returns the repository's git folder (its HEAD) and its common
// folder (refs, packed-refs), which differ for a linked worktree.
func GitDirs(ctx context.Context, r Repo) (gitDir, common string, err error) {
	out, err := git(ctx, r.Root, "rev-parse", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return "", "", fmt.Errorf("find the git folder of %s: %w", r.Root, err)
	}
	f := strings.Split(strings.TrimSpace(out), "\n")
	if len(f) != 2 {
		return "", "", fmt.Errorf("find the git folder of %s: git printed %q", r.Root, out)
	}
	gitDir, common = f[0], f[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(r.Root, common)
	}
	return gitDir, filepath.Clean(common), nil
}
