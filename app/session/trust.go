package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sandbar/app/net/policy"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// A repository's settings files (workspace.RepoSettings: .sandbar/network,
// .sandbarinclude/.worktreeinclude, .devcontainer) are proposals. They
// come with the repository, where an agent's merged commit may have
// written them, so a session uses one kind of them only once the person
// has trusted its exact content, by hash, as `direnv allow` and
// `mise trust` do. Untrusted, changed or ignored content is left out, and
// the session starts with Sandbar's and the project's own settings.

// The states of a kind of repository settings (RepoProposal.State).
const (
	TrustAbsent    = "absent"    // the repository has no such file
	TrustTrusted   = "trusted"   // this content is trusted: it is used
	TrustUntrusted = "untrusted" // never trusted: not used
	TrustChanged   = "changed"   // changed since it was trusted: not used
	TrustIgnored   = "ignored"   // the person chose not to use this content
)

// TrustStateWords says a trust state as the CLI and the window show it.
func TrustStateWords(state string) string {
	switch state {
	case TrustTrusted:
		return "trusted"
	case TrustUntrusted:
		return "not trusted yet, so not used"
	case TrustChanged:
		return "changed since you trusted it, so not used"
	case TrustIgnored:
		return "ignored (you chose not to use this content)"
	}
	return state
}

// ErrTrustChanged says a repository's settings changed between the
// review a person saw and their decision: nothing was recorded.
var ErrTrustChanged = errors.New("the repository's settings changed since they were shown")

// RepoProposal is one kind of a project's repository settings as the
// working tree has it now, beside what the person decided before.
type RepoProposal struct {
	workspace.RepoSettings
	// Hash is the SHA-256 of the files as they are now.
	Hash  string
	State string
	// Trusted is the content last trusted (none when never).
	Trusted workspace.RepoSettings
	// Diff is what changed since Trusted, file by file ("" when
	// trusted). It is the repository's text, to show escaped.
	Diff string
	// Refused says why a network file is not used even once trusted:
	// a line that does not parse, or a rule wider than a repository may
	// add (policy.CheckRepository). A file with a problem (a link, too
	// large) is refused too.
	Refused string
}

// Label names the kind's files for a message: fixed names, never one
// the repository chose.
func (p RepoProposal) Label() string {
	switch p.Kind {
	case workspace.SettingsNetwork:
		return workspace.NetworkFile
	case workspace.SettingsInclude:
		var names []string
		for _, f := range p.Files {
			names = append(names, f.Path) // only .sandbarinclude and .worktreeinclude
		}
		if len(names) == 0 {
			return ".sandbarinclude"
		}
		return strings.Join(names, " and ")
	case workspace.SettingsEnvironment:
		return ".devcontainer"
	}
	return p.Kind
}

// Pending reports whether the person has not decided on this content:
// present, neither trusted nor ignored.
func (p RepoProposal) Pending() bool {
	return p.State == TrustUntrusted || p.State == TrustChanged
}

// RepoReview is a project's repository settings, kind by kind, for the
// person to trust or ignore.
type RepoReview struct {
	Project   store.Project
	Root      string
	Proposals []RepoProposal
}

// Pending is the proposals waiting for the person's decision.
func (r RepoReview) Pending() []RepoProposal {
	var out []RepoProposal
	for _, p := range r.Proposals {
		if p.Pending() {
			out = append(out, p)
		}
	}
	return out
}

// Proposal is the review's proposal of a kind.
func (r RepoReview) Proposal(kind string) RepoProposal {
	for _, p := range r.Proposals {
		if p.Kind == kind {
			return p
		}
	}
	return RepoProposal{RepoSettings: workspace.RepoSettings{Kind: kind}, State: TrustAbsent}
}

// Notes are what a session's log says about the repository's settings:
// each kind present and not used, and why.
func (r RepoReview) Notes() []string { return r.notes(true) }

// Attention is what a window's banner says: the Notes of content waiting
// for the person's decision and of a trusted network file refused all
// the same, not of what the person chose to ignore.
func (r RepoReview) Attention() []string { return r.notes(false) }

func (r RepoReview) notes(all bool) []string {
	var out []string
	review := fmt.Sprintf("review it in Project Settings → Trust, or `sandbar project trust %s`", projectArg(r.Project))
	for _, p := range r.Proposals {
		switch {
		case p.State == TrustUntrusted:
			out = append(out, fmt.Sprintf("This repository's %s is not trusted yet, so it was not used: %s", p.Label(), review))
		case p.State == TrustChanged:
			out = append(out, fmt.Sprintf("This repository's %s changed since you trusted it, so it was not used: %s", p.Label(), review))
		case p.State == TrustTrusted && p.Refused != "":
			out = append(out, fmt.Sprintf("This repository's %s is trusted but was refused as a whole, so it was not used: %s", p.Label(), p.Refused))
		case !all:
			// What follows is said only in the log.
		case p.State == TrustIgnored:
			out = append(out, fmt.Sprintf("This repository's %s was not used: you chose to ignore this content (Project Settings → Trust)", p.Label()))
		}
	}
	return out
}

// projectArg is how a command line names the project: its name when it
// is a plain word, else its id.
func projectArg(p store.Project) string {
	if p.Name != "" && strings.IndexFunc(p.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r))
	}) < 0 {
		return p.Name
	}
	return fmt.Sprint(p.ID)
}

// NetworkRules is the trusted network file's text, "" when it is not
// to be used.
func (r RepoReview) NetworkRules() []byte {
	p := r.Proposal(workspace.SettingsNetwork)
	if p.State != TrustTrusted || p.Refused != "" {
		return nil
	}
	f, _ := p.File(workspace.NetworkFile)
	return f.Data
}

// IncludeLists is the trusted include lists' text, nil when they are
// not to be used.
func (r RepoReview) IncludeLists() []byte {
	if p := r.Proposal(workspace.SettingsInclude); p.State == TrustTrusted {
		return p.IncludeText()
	}
	return nil
}

// RepoTrust reads a project's repository settings from its working tree
// and says, kind by kind, whether the person trusted that content, with
// the diff since the last trusted version.
func (m *Manager) RepoTrust(ctx context.Context, projectRef string) (RepoReview, error) {
	proj, err := m.findProject(ctx, projectRef)
	if err != nil {
		return RepoReview{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return RepoReview{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	return m.repoReview(ctx, proj, repo.Root)
}

// repoReview is RepoTrust for a project whose working tree is at root.
func (m *Manager) repoReview(ctx context.Context, proj store.Project, root string) (RepoReview, error) {
	all, err := workspace.ReadRepoSettings(root)
	if err != nil {
		return RepoReview{}, err
	}
	decided, err := m.cfg.Store.RepoTrusts(ctx, proj.ID)
	if err != nil {
		return RepoReview{}, err
	}
	rev := RepoReview{Project: proj, Root: root}
	for _, s := range all {
		s = withBuildInputs(ctx, root, s)
		p := RepoProposal{RepoSettings: s, Hash: s.Hash(), State: TrustAbsent}
		var trusted, ignored string
		for _, d := range decided {
			if d.Kind != s.Kind {
				continue
			}
			switch d.Decision {
			case store.TrustTrusted:
				trusted = d.Hash
				if p.Trusted, err = workspace.DecodeRepoSettings(d.Content); err != nil {
					m.log.Warn("read the trusted repository settings", "project", proj.Name, "kind", s.Kind, "err", err)
				}
			case store.TrustIgnored:
				ignored = d.Hash
			}
		}
		switch {
		case !s.Present():
		case p.Hash == trusted:
			p.State = TrustTrusted
		case p.Hash == ignored:
			p.State = TrustIgnored
		case trusted != "":
			p.State = TrustChanged
		default:
			p.State = TrustUntrusted
		}
		if p.State != TrustTrusted && s.Present() {
			p.Diff = s.Diff(p.Trusted)
		}
		if s.Kind == workspace.SettingsNetwork && s.Present() {
			p.Refused = networkRefusal(s)
		}
		rev.Proposals = append(rev.Proposals, p)
	}
	return rev, nil
}

// networkRefusal says why a repository's network file would not be used
// even trusted, or "".
func networkRefusal(s workspace.RepoSettings) string {
	f, _ := s.File(workspace.NetworkFile)
	if f.Problem != "" {
		return f.Problem
	}
	parsed, err := policy.Parse(f.Data, policy.SourceRepository)
	if err == nil {
		err = policy.CheckRepository(parsed)
	}
	if err != nil {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return ""
}

// DecideRepoTrust records the person's decision (store.TrustTrusted or
// store.TrustIgnored) on the project's repository settings of each kind
// in hashes, which holds the hash of the content they were shown. If a
// kind's files changed since, nothing is recorded and the error wraps
// ErrTrustChanged: the person must review them again.
func (m *Manager) DecideRepoTrust(ctx context.Context, projectRef, decision string, hashes map[string]string) error {
	if decision != store.TrustTrusted && decision != store.TrustIgnored {
		return fmt.Errorf("decide on the repository's settings: %q is neither %s nor %s", decision, store.TrustTrusted, store.TrustIgnored)
	}
	rev, err := m.RepoTrust(ctx, projectRef)
	if err != nil {
		return err
	}
	var todo []RepoProposal
	for kind, h := range hashes {
		p := rev.Proposal(kind)
		if !p.Present() {
			return fmt.Errorf("the repository has no %s settings to decide on: %w: review them again", kind, ErrTrustChanged)
		}
		if p.Hash != h {
			return fmt.Errorf("%s changed since it was shown: %w: review it again", p.Label(), ErrTrustChanged)
		}
		todo = append(todo, p)
	}
	for _, p := range todo {
		if err := m.cfg.Store.SetRepoTrust(ctx, rev.Project.ID, store.RepoTrust{Kind: p.Kind, Decision: decision, Hash: p.Hash, Content: p.Encode()}); err != nil {
			return err
		}
		m.log.Info("repository settings decided", "project", rev.Project.Name, "kind", p.Kind, "decision", decision, "hash", p.Hash)
	}
	return nil
}
