package workspace

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A devcontainer.json that builds its image from a Dockerfile hands the
// build more than its own folder: the Dockerfile may lie anywhere in the
// repository ("../Dockerfile"), and its RUN steps run what its COPY and
// ADD take from the build context (COPY setup.sh . ; RUN ./setup.sh). A
// built image is shared by every session of the project (and the
// prepared environment made on it), so an agent's merged change to any
// of these files would steer the others. The environment's trust
// therefore covers them too (BuildInputs), as files of its kind.
//
// How the context is covered, and why: by the git objects of the paths
// the Dockerfile reads from it (dockerbuild.Dockerfile.ContextSources),
// at the working tree's HEAD. A build copies its context from a commit
// (never from the working tree), so the commit's objects are exactly
// what it can read; a git id names a file's or a folder's whole content,
// so a folder copied whole (COPY . /src) is covered by one line however
// large it is. Only the paths the build reads count, not the whole
// context: with the common "context": "..", hashing the context's tree
// would ask the person again at every commit of the project, and a
// question asked at every commit is a question answered without reading.
// Where a source cannot be resolved without running the build (a glob,
// a variable, a symlink the builder would follow) the path is widened to
// its folder or to the whole context, never narrowed.

// BuildContextLabel names, in a kind's file list, the entry that lists
// the build context's files a Dockerfile reads.
const BuildContextLabel = "(build context"

// Bounds on the build context's listing and on the content shown for
// review: past maxContextLines files a source is listed by its one git
// id; small files are shown whole, so a changed script reads as a diff.
const (
	maxContextLines = 400
	maxShownFile    = 64 << 10
	maxShownTotal   = 512 << 10
	maxShownFiles   = 32
)

// BuildInputs are the files a Dockerfile build reads beyond the
// devcontainer folder, as entries of the environment kind: the
// Dockerfile at dockerfile (a repository path) from the working tree at
// root, unless has says the kind lists it already; and one entry
// listing the git ids, at HEAD, of the sources the Dockerfile reads from
// the context folder contextDir (sources, given the Dockerfile's text,
// says which: paths relative to the context), with the content of the
// small ones. A path that cannot be read is an entry with its problem:
// it is part of what the person trusts, and changes the hash when it
// changes.
func (s RepoSettings) BuildInputs(ctx context.Context, root, dockerfile, contextDir string, sources func(dockerfile []byte) []string) []SettingsFile {
	var out []SettingsFile
	seen := func(p string) bool {
		_, had := s.File(p)
		return had || slices.ContainsFunc(out, func(f SettingsFile) bool { return f.Path == p })
	}
	df, had := s.File(dockerfile)
	if !had {
		var ok bool
		if df, ok = readSettingsFile(root, dockerfile); !ok {
			df = SettingsFile{Path: dockerfile, Problem: "no such file in the working tree"}
		}
		out = append(out, df)
	}
	contextDir = path.Clean(contextDir)
	label := fmt.Sprintf("%s %s at HEAD)", BuildContextLabel, contextDir)
	listing, shown, err := contextListing(ctx, root, "HEAD", contextDir, sources(df.Data))
	if err != nil {
		return append(out, SettingsFile{Path: label, Problem: err.Error()})
	}
	out = append(out, SettingsFile{Path: label, Data: []byte(listing)})
	total := 0
	for _, e := range shown {
		if len(out) > maxShownFiles || total+int(e.size) > maxShownTotal || seen(e.path) {
			continue
		}
		data, err := git(ctx, root, "cat-file", "blob", e.id)
		if err != nil {
			continue // the listing holds its id: the hash covers it all the same
		}
		total += len(data)
		out = append(out, SettingsFile{Path: e.path, Data: []byte(data)})
	}
	return out
}

// contextEntry is one line of git ls-tree -l.
type contextEntry struct {
	mode, typ, id, path string
	size                int64
}

// BuildContextListing is what BuildInputs lists of the build context,
// at commit in Sandbar's repository of the project: a build checks that
// the context it copies from its commit is the one the person trusted.
func (m *Mirror) BuildContextListing(ctx context.Context, commit, contextDir string, sources []string) (string, error) {
	if strings.HasPrefix(commit, "-") || commit == "" {
		return "", fmt.Errorf("list the build context at %q: not a commit", commit)
	}
	listing, _, err := contextListing(ctx, m.Dir, commit, path.Clean(contextDir), sources)
	return listing, err
}

// contextListing lists, one per line, the git ids at rev (in the
// repository at dir) of the sources in the context folder, and the
// small files among them to show whole.
func contextListing(ctx context.Context, dir, rev, contextDir string, sources []string) (string, []contextEntry, error) {
	root := dir
	head, err := git(ctx, root, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	head = strings.TrimSpace(head)
	if err != nil || head == "" {
		return "no commit yet: a build copies nothing from it\n", nil, nil
	}
	if len(sources) == 0 {
		return "the Dockerfile copies nothing from its context\n", nil, nil
	}
	var paths []string
	for _, s := range sources {
		p := path.Join(contextDir, s)
		if p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
			return "", nil, fmt.Errorf("the build context %s leads out of the repository", contextDir)
		}
		paths = append(paths, p)
	}
	entries, err := lsContext(ctx, root, head, paths)
	if err != nil {
		return "", nil, err
	}
	// A symlink among them is followed by the builder, maybe to any file
	// of the context: then the whole context is what it may read.
	if slices.ContainsFunc(entries, func(e contextEntry) bool { return e.mode == "120000" }) && !slices.Contains(paths, contextDir) {
		paths = []string{contextDir}
		if entries, err = lsContext(ctx, root, head, paths); err != nil {
			return "", nil, err
		}
	}
	var b strings.Builder
	var shown []contextEntry
	if len(entries) <= maxContextLines {
		for _, e := range entries {
			fmt.Fprintf(&b, "%s %s %s\n", e.mode, e.id, e.path)
			if e.typ == "blob" && e.mode != "120000" && e.size <= maxShownFile {
				shown = append(shown, e)
			}
		}
	} else {
		fmt.Fprintf(&b, "%d files; each path the Dockerfile copies, by its git id:\n", len(entries))
	}
	for _, p := range paths {
		if len(entries) <= maxContextLines && slices.ContainsFunc(entries, func(e contextEntry) bool { return e.path == p }) {
			continue // a file: listed above
		}
		spec := head + ":" + p
		if p == "." {
			spec = head + ":"
		}
		id, err := git(ctx, root, "rev-parse", "--verify", "--quiet", spec)
		if id = strings.TrimSpace(id); err != nil || id == "" {
			fmt.Fprintf(&b, "missing %s (the build will not find it)\n", p)
			continue
		}
		fmt.Fprintf(&b, "tree %s %s/\n", id, strings.TrimSuffix(p, "/"))
	}
	return b.String(), shown, nil
}

// lsContext lists the files at commit under paths, recursively.
func lsContext(ctx context.Context, root, commit string, paths []string) ([]contextEntry, error) {
	args := append([]string{"ls-tree", "-r", "-l", "-z", "--full-tree", commit, "--"}, paths...)
	out, err := git(ctx, root, args...)
	if errors.Is(err, ErrOutputTooLarge) {
		return nil, fmt.Errorf("the build context lists more than Sandbar reads: name fewer files in the Dockerfile's COPY and ADD")
	}
	if err != nil {
		return nil, fmt.Errorf("list the build context: %w", err)
	}
	var entries []contextEntry
	for _, rec := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		size, _ := strconv.ParseInt(f[3], 10, 64) // "-" for a submodule
		entries = append(entries, contextEntry{mode: f[0], typ: f[1], id: f[2], path: p, size: size})
	}
	return entries, nil
}
