package debian

import (
	"path"
	"strings"
)

// mergedTop says whether a top-level directory is one that bookworm's
// merged /usr turns into a link to its namesake under /usr.
func mergedTop(name string) bool {
	switch name {
	case "bin", "sbin", "lib", "lib32", "lib64", "libx32":
		return true
	}
	return false
}

// MergedUsrPath turns a path from a package ("./bin/ls", "/lib/x", "bin/")
// into its place in a merged-/usr tree, relative to the root and without
// a trailing slash: "usr/bin/ls", "usr/lib/x", "usr/bin". The root itself
// is "".
func MergedUsrPath(name string) string {
	p := path.Clean("/" + name)[1:]
	top, rest, _ := strings.Cut(p, "/")
	if mergedTop(top) {
		return path.Join("usr", top, rest)
	}
	return p
}

// MergedUsrLink returns the target a symlink at name (as in the package)
// pointing to target must have once both are moved by MergedUsrPath. An
// absolute target is folded the same way; a relative one is rewritten
// only when the link itself moved, so it still reaches the same file.
func MergedUsrLink(name, target string) string {
	if target == "" {
		return target
	}
	if path.IsAbs(target) {
		return "/" + MergedUsrPath(target)
	}
	from := path.Clean("/" + name)[1:]
	to := MergedUsrPath(name)
	if from == to {
		return target
	}
	abs := MergedUsrPath(path.Join(path.Dir(from), target))
	return relPath(path.Dir(to), abs)
}

// relPath is the relative path from directory base to targ, both clean
// and relative to the same root.
func relPath(base, targ string) string {
	split := func(p string) []string {
		if p == "" || p == "." {
			return nil
		}
		return strings.Split(p, "/")
	}
	b, t := split(base), split(targ)
	i := 0
	for i < len(b) && i < len(t) && b[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(b)-i+len(t)-i)
	for range b[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}
