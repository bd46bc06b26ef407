package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxSubmoduleDepth bounds how deep submodules of submodules are followed.
const maxSubmoduleDepth = 8

// submodule is one entry of a repository's .gitmodules that its commit
// records as a gitlink.
type submodule struct {
	name   string
	path   string // relative to the repository, slash-separated
	commit string // the commit the gitlink records
}

// submodulesAt lists the submodules recorded in rev of the repository at
// dir: each .gitmodules entry whose path rev holds as a gitlink. A
// repository without .gitmodules has none.
func submodulesAt(ctx context.Context, dir, rev string) ([]submodule, error) {
	if _, err := git(ctx, dir, "cat-file", "-e", rev+":.gitmodules"); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, nil
	}
	out, err := git(ctx, dir, "config", "-z", "--blob", rev+":.gitmodules", "--get-regexp", `^submodule\..*\.path$`)
	if err != nil {
		if exitCode(err) == 1 || ctx.Err() == nil && strings.Contains(gitMessage(err), "bad config") {
			return nil, nil // no paths, or a .gitmodules git cannot read either
		}
		return nil, fmt.Errorf("read .gitmodules in %s: %w", dir, err)
	}
	var subs []submodule
	for _, rec := range splitZ(out) {
		key, p, ok := strings.Cut(rec, "\n")
		if !ok || p == "" {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(key, "submodule."), ".path")
		// ls-tree, not rev-parse: only a gitlink (mode 160000) is a
		// submodule; a stale .gitmodules entry may name a plain folder.
		tree, err := git(ctx, dir, "ls-tree", "-z", rev, "--", p)
		if err != nil {
			return nil, fmt.Errorf("read %s in %s: %w", p, dir, err)
		}
		for _, ent := range splitZ(tree) {
			meta, _, _ := strings.Cut(ent, "\t")
			f := strings.Fields(meta)
			if len(f) == 3 && f[0] == "160000" && f[1] == "commit" {
				subs = append(subs, submodule{name: name, path: p, commit: f[2]})
			}
		}
	}
	return subs, nil
}

// checkedOut reports whether dir is the top of a git working tree.
func checkedOut(ctx context.Context, dir string) bool {
	top, err := gitLine(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return false
	}
	a, err1 := filepath.EvalSymlinks(top)
	b, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && a == b
}

// cloneSubmodules checks out, in the clone dest of src, every submodule
// that src has checked out, from src's own copy: objects hardlinked as for
// the clone itself, nothing fetched from the network. Each submodule's
// origin is then its URL from .gitmodules (resolved as git resolves it)
// and its "source" remote is src's copy. A submodule src has not checked
// out, or whose recorded commit src's copy lacks, stays empty and is
// listed in skipped with what to do; prefix is the path of dest inside
// the top clone, for those messages. It recurses into submodules of
// submodules.
func cloneSubmodules(ctx context.Context, src, dest, prefix string, depth int, progress func(Progress)) (done, skipped []string, err error) {
	subs, err := submodulesAt(ctx, dest, "HEAD")
	if err != nil || len(subs) == 0 {
		return nil, nil, err
	}
	if depth == 0 && progress != nil {
		progress(Progress{Phase: PhaseSubmodules})
	}
	if depth >= maxSubmoduleDepth {
		for _, s := range subs {
			skipped = append(skipped, fmt.Sprintf("%s%s: submodules nested deeper than %d are not checked out", prefix, s.path, maxSubmoduleDepth))
		}
		return nil, skipped, nil
	}
	for _, s := range subs {
		shown := prefix + s.path
		from := filepath.Join(src, filepath.FromSlash(s.path))
		to := filepath.Join(dest, filepath.FromSlash(s.path))
		if !checkedOut(ctx, from) {
			skipped = append(skipped, fmt.Sprintf("%s: not checked out in %s: run `git submodule update --init` there, then start a new session", shown, src))
			continue
		}
		if _, err := git(ctx, from, "cat-file", "-e", s.commit+"^{commit}"); err != nil {
			if ctx.Err() != nil {
				return done, skipped, ctx.Err()
			}
			skipped = append(skipped, fmt.Sprintf("%s: commit %s is not in %s: fetch it there (git -C %q fetch), then start a new session", shown, short(s.commit), from, from))
			continue
		}
		if err := updateSubmodule(ctx, dest, s, from, progress); err != nil {
			if ctx.Err() != nil {
				return done, skipped, ctx.Err()
			}
			skipped = append(skipped, fmt.Sprintf("%s: could not be checked out from %s: %s", shown, from, gitMessage(err)))
			continue
		}
		done = append(done, shown)
		d, sk, err := cloneSubmodules(ctx, from, to, shown+"/", depth+1, progress)
		done = append(done, d...)
		skipped = append(skipped, sk...)
		if err != nil {
			return done, skipped, err
		}
	}
	return done, skipped, nil
}

// updateSubmodule checks out s in the clone dest from the local copy from,
// then points it at its real URL. It checks out even a submodule whose
// .gitmodules says update = none (or rebase, merge): the clone is new,
// and the source has it checked out. On failure it leaves s as git leaves a
// submodule never initialised: an empty folder and no configuration.
func updateSubmodule(ctx context.Context, dest string, s submodule, from string, progress func(Progress)) error {
	key := "submodule." + s.name
	if _, err := git(ctx, dest, "config", key+".url", from); err != nil {
		return err
	}
	err := gitProgress(ctx, dest, progress,
		"-c", "protocol.file.allow=always", "-c", "checkout.workers=0",
		"submodule", "update", "--init", "--checkout", "--progress", "--", s.path)
	if err == nil {
		// The URL .gitmodules gives, relative ones resolved against the
		// clone's origin (the person's own remote), in the clone's config
		// and as the submodule's origin.
		_, err = git(ctx, dest, "submodule", "sync", "--quiet", "--", s.path)
	}
	to := filepath.Join(dest, filepath.FromSlash(s.path))
	if err == nil && !checkedOut(ctx, to) {
		// Never run git in a folder that is not the submodule: it would
		// act on the clone around it.
		err = fmt.Errorf("git submodule update left %s without a checkout", s.path)
	}
	if err == nil {
		_, err = git(ctx, to, "remote", "add", "source", from)
	}
	if err != nil {
		if gitdir, gerr := gitLine(context.WithoutCancel(ctx), dest, "rev-parse", "--git-path", "modules/"+s.name); gerr == nil && gitdir != "" {
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(dest, gitdir)
			}
			_ = os.RemoveAll(gitdir)
		}
		_ = os.RemoveAll(to)
		_ = os.MkdirAll(to, 0o755)
		_, _ = git(context.WithoutCancel(ctx), dest, "config", "--remove-section", key)
		return err
	}
	return nil
}

// mergeSubmodules brings into src's submodule copies the commits that
// commit, in the clone dest, records for them and that they lack: each
// becomes the branch named branch in that copy (created, fast-forwarded,
// or overwritten when force), so the merged branch of src never names a
// submodule commit src does not have. It recurses into submodules of
// submodules and returns the paths it brought commits into.
func mergeSubmodules(ctx context.Context, src, dest, commit, branch string, force bool, prefix string) ([]string, error) {
	subs, err := submodulesAt(ctx, dest, commit)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	ref := "refs/heads/" + branch
	var brought []string
	for _, s := range subs {
		shown := prefix + s.path
		from := filepath.Join(dest, filepath.FromSlash(s.path))
		to := filepath.Join(src, filepath.FromSlash(s.path))
		// git runs only in a folder that is the submodule: in one left
		// without a checkout it would act on the repository around it.
		toReady := checkedOut(ctx, to)
		if toReady {
			if _, err := git(ctx, to, "cat-file", "-e", s.commit+"^{commit}"); err == nil {
				continue // src has it (the base's commit, most often)
			}
		}
		if ctx.Err() != nil {
			return brought, ctx.Err()
		}
		if !checkedOut(ctx, from) {
			// Never checked out in the session (Clone skipped it): the
			// branch records what the base did, and there is nothing of
			// the session's to bring.
			continue
		}
		if !toReady {
			return brought, fmt.Errorf("submodule %s is not checked out in %s, so the session's commit %s in it has nowhere to go: run `git submodule update --init` there and merge again", shown, src, short(s.commit))
		}
		if where, err := checkedOutAt(ctx, to, ref); err != nil {
			return brought, err
		} else if where != "" {
			return brought, fmt.Errorf("branch %s is checked out in submodule %s (%s), and merging must not touch its files (%w): switch it to another branch and merge again", branch, shown, where, ErrCheckedOut)
		}
		// A ref in the clone's copy names the commit for the fetch (the
		// agent may have left it on no branch), and goes again after.
		const tmp = "refs/sandbar/merge"
		if _, err := git(ctx, from, "update-ref", tmp, s.commit); err != nil {
			return brought, fmt.Errorf("submodule %s: the session's clone lacks commit %s that its branch records: %s", shown, short(s.commit), gitMessage(err))
		}
		spec := tmp + ":" + ref
		if force {
			spec = "+" + spec
		}
		err := fetchLocal(ctx, to, from, spec, branch)
		_, _ = git(context.WithoutCancel(ctx), from, "update-ref", "-d", tmp)
		if err != nil {
			return brought, fmt.Errorf("submodule %s: %w", shown, err)
		}
		brought = append(brought, shown)
		more, err := mergeSubmodules(ctx, to, from, s.commit, branch, force, shown+"/")
		brought = append(brought, more...)
		if err != nil {
			return brought, err
		}
	}
	return brought, nil
}
