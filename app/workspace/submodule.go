package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
)

// Submodules travel as the rest of a session's work does, as data
// through Sandbar's repository (the Mirror), whose object store holds
// every submodule's objects beside the project's own:
//
//   - In: BuildBase copies the history of each submodule the source has
//     checked out (from the source's own copy, read-only) into the mirror,
//     pinned under refs/sandbar/modules/<key>/<commit>, and writes its
//     checkout into the base disk the way `git submodule update` lays it
//     out (.git/modules/<name>, a gitfile, core.worktree).
//   - Back: SaveScript sends a pack per checked-out submodule; ImportSave
//     takes each in with the same checks as the project's own pack.
//   - Merge: each submodule commit the session's branch records and the
//     source's copy lacks is fetched from the mirror into that copy, as
//     the branch of the same name.

// maxSubmoduleDepth bounds how deep submodules of submodules are followed.
const maxSubmoduleDepth = 8

// moduleRefs pins, in the mirror, the submodule commits carried in from
// the source: refs/sandbar/modules/<key of its path>/<commit>.
const moduleRefs = "refs/sandbar/modules/"

// gitlink is a submodule a commit records: a tree entry of type commit,
// with its name and URL from that commit's .gitmodules (read as data).
type gitlink struct {
	path   string // from the top of the clone, slash-separated
	rel    string // inside the repository that records it
	name   string // "" when .gitmodules has no usable entry for rel
	url    string // as .gitmodules gives it, relative ones resolved
	commit string
}

// gitlinks lists the submodules commit records, in the mirror. prefix is
// the path of commit's repository in the clone ("" or ending in "/"),
// parentURL its own URL, against which relative URLs are resolved.
func (m *Mirror) gitlinks(ctx context.Context, commit, prefix, parentURL string) ([]gitlink, error) {
	out, err := m.git(ctx, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit)
	if err != nil {
		return nil, tooManyFiles(fmt.Errorf("list the submodules of %s: %w", short(commit), err))
	}
	var links []gitlink
	for _, rec := range splitZ(out) {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "commit" || !isHex(f[2]) {
			continue
		}
		links = append(links, gitlink{path: prefix + p, rel: p, commit: f[2]})
	}
	if len(links) == 0 {
		return nil, nil
	}
	// Names and URLs, from .gitmodules as data: --blob reads no include.
	cfg, err := m.git(ctx, "config", "-z", "--blob", commit+":.gitmodules", "--get-regexp", `^submodule\..*\.(path|url)$`)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	names, urls := map[string]string{}, map[string]string{}
	for _, rec := range splitZ(cfg) {
		key, val, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(key, "submodule.")
		if !ok {
			continue
		}
		if name, ok := strings.CutSuffix(rest, ".path"); ok && validModuleName(name) {
			if _, dup := names[val]; !dup {
				names[val] = name
			}
		} else if name, ok := strings.CutSuffix(rest, ".url"); ok {
			urls[name] = val
		}
	}
	for i := range links {
		if name, ok := names[links[i].rel]; ok {
			links[i].name = name
			links[i].url = resolveModuleURL(parentURL, urls[name])
		}
	}
	return links, nil
}

// validModuleName accepts a submodule name Sandbar may use as a folder
// under .git/modules: what git accepts, less anything odd.
func validModuleName(name string) bool {
	if name == "" || len(name) > 255 || strings.HasPrefix(name, "/") {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// validModulePath accepts the path of a submodule in a clone: relative,
// clean, slash-separated, no .git component, no control character.
func validModulePath(p string) bool {
	if p == "" || len(p) > 4096 || !fs.ValidPath(p) || p == "." {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return false
		}
	}
	return true
}

// resolveModuleURL resolves a relative submodule URL ("./x", "../x")
// against the URL of the repository that records it, as git does for the
// common forms; an absolute one is returned as is, without any password.
func resolveModuleURL(parent, u string) string {
	if !strings.HasPrefix(u, "./") && !strings.HasPrefix(u, "../") {
		return redactURL(u)
	}
	if parent == "" {
		return u
	}
	base := strings.TrimSuffix(parent, "/")
	for {
		switch {
		case strings.HasPrefix(u, "./"):
			u = u[2:]
			continue
		case strings.HasPrefix(u, "../"):
			u = u[3:]
			i := strings.LastIndexAny(base, "/:")
			if i < 0 {
				base = "."
			} else if base[i] == ':' {
				base = base[:i+1]
			} else {
				base = base[:i]
			}
			continue
		}
		break
	}
	if strings.HasSuffix(base, ":") {
		return base + u
	}
	return base + "/" + u
}

// refKey makes a submodule's path into one ref name component: bytes
// other than letters, digits, '-' and '_' as %XX; a long one as its hash
// ("%%" never occurs in an escaped path).
func refKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 200 {
		s := sha256.Sum256([]byte(p))
		return "%%" + hex.EncodeToString(s[:])
	}
	return b.String()
}

// linkAt finds the submodule at p (a path from the top of the clone) that
// commit records, following submodules of submodules through commits the
// mirror holds; "" when there is none. seen keeps the lists already read,
// by commit and prefix.
func (m *Mirror) linkAt(ctx context.Context, commit, p string, seen map[string][]gitlink) (string, error) {
	prefix := ""
	for depth := 0; depth <= maxSubmoduleDepth; depth++ {
		links, ok := seen[commit+" "+prefix]
		if !ok {
			var err error
			if links, err = m.gitlinks(ctx, commit, prefix, ""); err != nil {
				return "", err
			}
			seen[commit+" "+prefix] = links
		}
		next := ""
		for _, l := range links {
			if l.path == p {
				return l.commit, nil
			}
			if strings.HasPrefix(p, l.path+"/") && m.hasCommit(ctx, l.commit) {
				next, prefix = l.commit, l.path+"/"
				break
			}
		}
		if next == "" {
			return "", nil
		}
		commit = next
	}
	return "", nil
}
