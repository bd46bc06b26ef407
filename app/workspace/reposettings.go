package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A repository's settings files steer what Sandbar does for the
// repository's sessions: which network they reach, which of the person's
// ignored files go into their VMs, what environment they run in. They
// come with the repository, so an agent's merged commit could write them:
// they are proposals, which Sandbar uses only once the person has trusted
// that exact content (see session.Manager.RepoTrust). Each kind is read
// and trusted on its own.
const (
	// SettingsNetwork is .sandbar/network: network rules.
	SettingsNetwork = "network"
	// SettingsInclude is .sandbarinclude and .worktreeinclude: the
	// person's ignored files that a session's clone gets.
	SettingsInclude = "include"
	// SettingsEnvironment is .devcontainer.json and .devcontainer/:
	// the environment a session runs in (see session's environment.go),
	// with what its Dockerfile build reads from elsewhere in the
	// repository (see buildinputs.go).
	SettingsEnvironment = "environment"
)

// SettingsKinds are the kinds, in the order they are shown.
func SettingsKinds() []string {
	return []string{SettingsNetwork, SettingsInclude, SettingsEnvironment}
}

// settingsWhat says in words what a kind's files ask for.
func settingsWhat(kind string) string {
	switch kind {
	case SettingsNetwork:
		return "network rules for its sessions"
	case SettingsInclude:
		return "which of your ignored files (.env, keys) go into its sessions' VMs"
	case SettingsEnvironment:
		return "the environment its sessions run in, and what its image is built from"
	}
	return kind
}

// Bounds on what a kind's files may hold; past them a file is shown as
// left out, never read whole.
const (
	maxSettingsFile  = 1 << 20
	maxSettingsTotal = 4 << 20
	maxSettingsFiles = 256
)

// SettingsFile is one file of a repository's settings as found in the
// person's working tree.
type SettingsFile struct {
	// Path is relative to the repository's top, slash-separated.
	Path string `json:"path"`
	// Data is the file's content; nil when it could not be read.
	Data []byte `json:"data,omitempty"`
	// Problem says why the file could not be read (a symlink, not a
	// regular file, too large): such a file is shown, never used.
	Problem string `json:"problem,omitempty"`
}

// RepoSettings is one kind of a repository's settings: its files, sorted
// by path (none when the repository has none).
type RepoSettings struct {
	Kind  string         `json:"kind"`
	Files []SettingsFile `json:"files"`
}

// Present reports whether the repository has any file of the kind.
func (s RepoSettings) Present() bool { return len(s.Files) > 0 }

// What says in words what the kind's files ask for.
func (s RepoSettings) What() string { return settingsWhat(s.Kind) }

// Names lists the kind's file names, for a message.
func (s RepoSettings) Names() string {
	var names []string
	for _, f := range s.Files {
		names = append(names, f.Path)
	}
	return strings.Join(names, ", ")
}

// Hash is the SHA-256, in hex, of the kind's file set: each file's path,
// content and problem, so that any change (a file added, removed,
// renamed or edited) is a new hash.
func (s RepoSettings) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "sandbar repository settings v1\x00%s\x00%d\x00", s.Kind, len(s.Files))
	for _, f := range s.Files {
		fmt.Fprintf(h, "%d\x00%s\x00%d\x00%s\x00%d\x00", len(f.Path), f.Path, len(f.Problem), f.Problem, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Encode writes the file set down, to be kept with a decision and
// read back by DecodeRepoSettings.
func (s RepoSettings) Encode() []byte {
	b, _ := json.Marshal(s)
	return b
}

// DecodeRepoSettings reads back what Encode wrote.
func DecodeRepoSettings(b []byte) (RepoSettings, error) {
	var s RepoSettings
	if len(b) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return RepoSettings{}, fmt.Errorf("read kept repository settings: %w", err)
	}
	return s, nil
}

// File returns the kind's file at path, if it has one.
func (s RepoSettings) File(path string) (SettingsFile, bool) {
	for _, f := range s.Files {
		if f.Path == path {
			return f, true
		}
	}
	return SettingsFile{}, false
}

// Diff is what changed from old to s, file by file, as lines marked
// "+" and "-" (see LineDiff); "" when nothing did.
func (s RepoSettings) Diff(old RepoSettings) string {
	var paths []string
	for _, f := range append(slices.Clone(old.Files), s.Files...) {
		if !slices.Contains(paths, f.Path) {
			paths = append(paths, f.Path)
		}
	}
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		o, had := old.File(p)
		n, has := s.File(p)
		if had && has && string(o.Data) == string(n.Data) && o.Problem == n.Problem {
			continue
		}
		switch {
		case !had:
			fmt.Fprintf(&b, "--- %s (new)\n", p)
		case !has:
			fmt.Fprintf(&b, "--- %s (removed)\n", p)
		default:
			fmt.Fprintf(&b, "--- %s\n", p)
		}
		if n.Problem != "" {
			fmt.Fprintf(&b, "(left out: %s)\n", n.Problem)
		}
		b.WriteString(LineDiff(string(o.Data), string(n.Data)))
	}
	return b.String()
}

// ReadRepoSettings reads every kind of the repository's settings from
// its working tree at root: the person's files, on the host, before a
// session starts. Nothing in them is followed or interpreted here: a
// symlink, a FIFO, a device or a file past the bounds is listed with its
// problem and no content.
func ReadRepoSettings(root string) ([]RepoSettings, error) {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("read the repository's settings: %s is not a folder", root)
	}
	var out []RepoSettings
	for _, kind := range SettingsKinds() {
		s := RepoSettings{Kind: kind}
		switch kind {
		case SettingsNetwork:
			s.Files = readSettingsFiles(root, []string{NetworkFile})
		case SettingsInclude:
			s.Files = readSettingsFiles(root, includeFiles())
		case SettingsEnvironment:
			s.Files = readSettingsFiles(root, []string{".devcontainer.json"})
			s.Files = append(s.Files, readSettingsTree(root, ".devcontainer")...)
		}
		slices.SortFunc(s.Files, func(a, b SettingsFile) int { return strings.Compare(a.Path, b.Path) })
		out = append(out, s)
	}
	return out, nil
}

// readSettingsFiles reads the named files that exist, each a regular
// file reached through no symlink.
func readSettingsFiles(root string, names []string) []SettingsFile {
	var out []SettingsFile
	for _, name := range names {
		if f, ok := readSettingsFile(root, name); ok {
			out = append(out, f)
		}
	}
	return out
}

// readSettingsFile reads one file; false when there is none.
func readSettingsFile(root, rel string) (SettingsFile, bool) {
	// Every folder on the way must be a folder, not a link to one.
	segs := strings.Split(rel, "/")
	for i := 1; i < len(segs); i++ {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(strings.Join(segs[:i], "/"))))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return SettingsFile{}, false
		case err != nil:
			return SettingsFile{Path: rel, Problem: err.Error()}, true
		case !fi.IsDir():
			return SettingsFile{Path: rel, Problem: strings.Join(segs[:i], "/") + " is not a folder (a symlink is not followed)"}, true
		}
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return SettingsFile{}, false
	case err != nil:
		return SettingsFile{Path: rel, Problem: err.Error()}, true
	case fi.Mode()&fs.ModeSymlink != 0:
		return SettingsFile{Path: rel, Problem: "a symlink, which is not followed: make it a plain file"}, true
	case !fi.Mode().IsRegular():
		return SettingsFile{Path: rel, Problem: "not a regular file"}, true
	}
	data, err := readRegular(p, maxSettingsFile)
	if err != nil {
		return SettingsFile{Path: rel, Problem: fmt.Sprintf("%v: it must be a plain file of at most 1 MiB", err)}, true
	}
	if data == nil {
		data = []byte{}
	}
	return SettingsFile{Path: rel, Data: data}, true
}

// readSettingsTree reads the files under the folder rel, bounded in
// number and bytes; links are listed, never followed.
func readSettingsTree(root, rel string) []SettingsFile {
	top := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(top)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return []SettingsFile{{Path: rel, Problem: err.Error()}}
	case !fi.IsDir():
		return []SettingsFile{{Path: rel, Problem: "not a folder (a symlink is not followed)"}}
	}
	var out []SettingsFile
	var total int
	filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		r, _ := filepath.Rel(root, p)
		r = filepath.ToSlash(r)
		switch {
		case err != nil:
			out = append(out, SettingsFile{Path: r, Problem: err.Error()})
			return nil
		case d.IsDir():
			return nil
		case len(out) >= maxSettingsFiles:
			return filepath.SkipAll
		}
		f, _ := readSettingsFile(root, r)
		if f.Problem == "" && total+len(f.Data) > maxSettingsTotal {
			f = SettingsFile{Path: r, Problem: fmt.Sprintf("the files under %s pass %d MiB", rel, maxSettingsTotal>>20)}
		}
		total += len(f.Data)
		out = append(out, f)
		return nil
	})
	if len(out) >= maxSettingsFiles {
		out = append(out, SettingsFile{Path: rel + "/…", Problem: fmt.Sprintf("more than %d files: the rest are not read", maxSettingsFiles)})
	}
	return out
}

// IncludeText is the include lists' content joined, to hand to
// BaseOptions.IncludeLists once trusted; files with a problem are left
// out.
func (s RepoSettings) IncludeText() []byte {
	var b []byte
	for _, f := range s.Files {
		if f.Problem == "" {
			b = append(b, f.Data...)
			b = append(b, '\n')
		}
	}
	return b
}
