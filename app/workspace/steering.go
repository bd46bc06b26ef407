package workspace

import (
	"context"
	"fmt"
	"path"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Steering is a file a session changed that steers tools on the person's
// machine (see steeringRules): merged, it changes what git, the editor,
// the shell, a package manager, CI or Sandbar itself does, without the
// person running anything of the session's by hand.
type Steering struct {
	// Path is slash-separated, relative to the repository's top.
	Path string `json:"path"`
	// Status is FileChange's: "added", "modified", "deleted", "renamed"…
	Status string `json:"status"`
	// Why says, in a few words, what the file steers.
	Why string `json:"why"`
	// NeedsTrust: Sandbar itself uses the file only once the person
	// trusts its content, so a change to it needs that trust again.
	NeedsTrust bool `json:"needs_trust,omitempty"`
}

// steeringRule names steering files: Name is a file's name (matched at
// any depth when AnyDepth, else at the top only), or a folder's when
// Dir (then every file under it, at the top only, matches).
type steeringRule struct {
	Name       string
	Dir        bool
	AnyDepth   bool
	Why        string
	NeedsTrust bool
}

// steeringRules is the one list of steering files. A file is on it when
// a tool on the person's machine reads it on its own, without being asked
// to by name, and it changes what that tool runs, contacts or shows: git
// (filters and LFS endpoints, hooks managers, submodule URLs, blame and
// log identities), the shell (direnv), version and toolchain managers
// (which pick, download or run binaries), package managers (registries,
// scripts, plugins), editors and IDEs (tasks, settings naming programs),
// interpreters that run a start-up file from the working folder, CI that
// runs with the repository's secrets, and Sandbar's own repository
// settings. Files a person runs on purpose (Makefile, package.json's
// scripts, build files) are source, not steering. The depth follows the
// tool: git, direnv, EditorConfig, mise/asdf, cargo and rustup read
// their files in every folder on the way to the top, the others only at
// the top of the project.
var steeringRules = []steeringRule{
	{Name: ".gitattributes", AnyDepth: true, Why: "git filters (LFS), merge and diff drivers for files"},
	{Name: ".lfsconfig", AnyDepth: true, Why: "where git-lfs sends and fetches"},
	{Name: ".gitmodules", Why: "submodule URLs git clones and fetches"},
	{Name: ".mailmap", Why: "the names git shows for commits"},
	{Name: ".git-blame-ignore-revs", Why: "commits git blame hides"},
	{Name: ".githooks", Dir: true, Why: "git hooks (where core.hooksPath points here)"},
	{Name: ".husky", Dir: true, Why: "git hooks husky installs"},
	{Name: ".pre-commit-config.yaml", Why: "programs pre-commit runs on commit"},
	{Name: "lefthook.yml", Why: "programs lefthook runs on commit"},
	{Name: ".lefthook.yml", Why: "programs lefthook runs on commit"},
	{Name: ".sandbar", Dir: true, Why: "Sandbar's settings for this repository", NeedsTrust: true},
	{Name: ".sandbarinclude", Why: "which of your ignored files go into sessions", NeedsTrust: true},
	{Name: ".worktreeinclude", Why: "which of your ignored files go into sessions", NeedsTrust: true},
	{Name: ".devcontainer", Dir: true, Why: "the environment sessions run in", NeedsTrust: true},
	{Name: ".devcontainer.json", Why: "the environment sessions run in", NeedsTrust: true},
	{Name: ".envrc", AnyDepth: true, Why: "shell code direnv runs when you enter the folder"},
	{Name: ".env", Why: "variables tools load on their own"},
	{Name: ".tool-versions", AnyDepth: true, Why: "the tool versions asdf and mise install and run"},
	{Name: "mise.toml", AnyDepth: true, Why: "tools, tasks and environment mise sets"},
	{Name: ".mise.toml", AnyDepth: true, Why: "tools, tasks and environment mise sets"},
	{Name: "mise.local.toml", AnyDepth: true, Why: "tools, tasks and environment mise sets"},
	{Name: ".mise", Dir: true, Why: "tools, tasks and environment mise sets"},
	{Name: ".nvmrc", AnyDepth: true, Why: "the Node version your version manager switches to"},
	{Name: ".node-version", Why: "the Node version your version manager switches to"},
	{Name: ".python-version", Why: "the Python pyenv runs"},
	{Name: ".ruby-version", Why: "the Ruby your version manager runs"},
	{Name: "rust-toolchain", AnyDepth: true, Why: "the Rust toolchain rustup runs"},
	{Name: "rust-toolchain.toml", AnyDepth: true, Why: "the Rust toolchain rustup runs"},
	{Name: ".cargo", Dir: true, Why: "cargo's registries, runners and wrappers"},
	{Name: ".npmrc", AnyDepth: true, Why: "npm's registry, scripts shell and Node options"},
	{Name: ".yarnrc", AnyDepth: true, Why: "yarn's registry and the yarn it runs"},
	{Name: ".yarnrc.yml", AnyDepth: true, Why: "yarn's registry, plugins and the yarn it runs"},
	{Name: ".pnpmfile.cjs", Why: "code pnpm runs on install"},
	{Name: ".bundle", Dir: true, Why: "bundler's sources and paths"},
	{Name: ".pdbrc", Why: "Python code pdb runs at start"},
	{Name: ".irbrc", Why: "Ruby code irb runs at start"},
	{Name: ".pryrc", Why: "Ruby code pry runs at start"},
	{Name: ".Rprofile", Why: "R code R runs at start"},
	{Name: ".exrc", Why: "commands vim runs (with exrc on)"},
	{Name: ".nvim.lua", Why: "code Neovim runs (with exrc on)"},
	{Name: ".nvimrc", Why: "commands Neovim runs (with exrc on)"},
	{Name: ".dir-locals.el", AnyDepth: true, Why: "Emacs settings and code for the folder"},
	{Name: ".editorconfig", AnyDepth: true, Why: "how your editor writes files"},
	{Name: ".vscode", Dir: true, Why: "VS Code tasks, launch and settings"},
	{Name: ".idea", Dir: true, Why: "JetBrains run configurations and settings"},
	{Name: ".github/workflows", Dir: true, Why: "CI jobs that run with the repository's secrets"},
	{Name: ".github/actions", Dir: true, Why: "actions the CI jobs run"},
	{Name: ".gitlab-ci.yml", Why: "CI jobs that run with the repository's secrets"},
	{Name: ".circleci", Dir: true, Why: "CI jobs that run with the repository's secrets"},
	{Name: ".claude", Dir: true, Why: "Claude Code's settings and hooks (commands it runs) for the repository"},
	{Name: ".mcp.json", Why: "MCP servers (programs) your agent starts for the repository"},
	{Name: ".cursor", Dir: true, Why: "Cursor's rules, settings and MCP servers"},
	{Name: ".zed", Dir: true, Why: "Zed's tasks and settings"},
	{Name: ".yarn/releases", Dir: true, Why: "the yarn program yarn runs (yarnPath)"},
	{Name: ".yarn/plugins", Dir: true, Why: "plugins yarn runs"},
	{Name: ".mvn", Dir: true, Why: "Maven's extensions and JVM options"},
}

// steeringRule returns the rule p (a slash-separated path from the top)
// falls under, if any.
//
// Names are compared as a case-insensitive, normalising file system
// (APFS, NTFS) sees them, on every platform: there `.GitAttributes` is
// `.gitattributes`, and `.HUSKY/pre-commit` lands in `.husky/`. Flagging
// a file too many is cheap; missing one is not.
func steeringRuleFor(p string) (steeringRule, bool) {
	p = foldSteering(strings.TrimPrefix(p, "./"))
	base := path.Base(p)
	for _, r := range steeringRules {
		name := strings.ToLower(r.Name)
		switch {
		case r.Dir:
			if strings.HasPrefix(p, name+"/") {
				return r, true
			}
		case r.AnyDepth:
			if base == name {
				return r, true
			}
		default:
			if p == name {
				return r, true
			}
		}
	}
	return steeringRule{}, false
}

// foldSteering is p as a case-insensitive, normalising file system
// compares it: Unicode case folded and NFD, without the code points HFS+
// and APFS ignore in names (as git's is_hfs_dotgit drops them).
func foldSteering(p string) string {
	p = norm.NFD.String(cases.Fold().String(p))
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, p)
}

// IsSteering reports whether the file at p (slash-separated, from the
// repository's top) is a steering file, and what it steers.
func IsSteering(p string) (why string, ok bool) {
	r, ok := steeringRuleFor(p)
	return r.Why, ok
}

// SteeringIn picks the steering files out of changed files: a rename
// counts where either of its names is one.
func SteeringIn(files []FileChange) []Steering {
	var out []Steering
	for _, f := range files {
		r, ok := steeringRuleFor(f.Path)
		if !ok && f.From != "" {
			r, ok = steeringRuleFor(f.From)
		}
		if ok {
			out = append(out, Steering{Path: f.Path, Status: f.Status, Why: r.Why, NeedsTrust: r.NeedsTrust})
		}
	}
	return out
}

// SteeringBetween lists the steering files that differ between commits
// from and to in Sandbar's repository (a diff of trees: data only).
func (m *Mirror) SteeringBetween(ctx context.Context, from, to string) ([]Steering, error) {
	files, err := m.changedBetween(ctx, from, to)
	if err != nil {
		return nil, err
	}
	return SteeringIn(files), nil
}

// changedBetween lists the files that differ between the trees of from
// and to, without rename detection: each path a checkout from one to the
// other writes or removes.
func (m *Mirror) changedBetween(ctx context.Context, from, to string) ([]FileChange, error) {
	out, err := git(ctx, m.Dir, "diff-tree", "-r", "-z", "--no-renames", "--name-status", "--no-ext-diff", "--no-textconv", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("list the files the session's work changes: %w", err)
	}
	return parseNameStatus(out), nil
}

// SteeringNote is the line a merge's output gives a steering file: its
// path, what it steers, and, for one Sandbar uses only once trusted,
// that it will need that trust again.
func SteeringNote(s Steering) string {
	line := fmt.Sprintf("%s (%s, %s)", quotePath(s.Path), s.Status, s.Why)
	if s.NeedsTrust {
		line += ": this changes " + quotePath(s.Path) + ", which will need your trust again before Sandbar uses it"
	}
	return line
}
