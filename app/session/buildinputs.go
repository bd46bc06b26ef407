package session

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/dockerbuild"
	"sandbar/app/workspace"
)

// withBuildInputs adds to the environment kind of a repository's
// settings what its devcontainer.json's Dockerfile build reads outside
// the devcontainer folder: the Dockerfile wherever it is in the
// repository, and the build context's files its COPY, ADD and RUN
// --mount take (see workspace's buildinputs.go for how and why). The
// person's trust of the environment is then a trust of what the build
// runs. A file that names no build, or does not parse (it is not used
// then: the session fails, saying why), adds nothing.
func withBuildInputs(ctx context.Context, root string, s workspace.RepoSettings) workspace.RepoSettings {
	if s.Kind != workspace.SettingsEnvironment {
		return s
	}
	cfg := environmentConfig(s)
	if cfg == nil || cfg.Build == nil || cfg.Image != "" {
		return s
	}
	s.Files = append(s.Files, s.BuildInputs(ctx, root, cfg.Build.Dockerfile, cfg.Build.Context, buildSources(cfg.Build))...)
	slices.SortFunc(s.Files, func(a, b workspace.SettingsFile) int { return strings.Compare(a.Path, b.Path) })
	return s
}

// buildSources says which paths of the build context a Dockerfile's text
// reads (dockerbuild.Dockerfile.ContextSources).
func buildSources(b *devcontainer.Build) func([]byte) []string {
	args := map[string]string{}
	for _, a := range b.Args {
		args[a.Name] = a.Value
	}
	return func(data []byte) []string {
		df, err := dockerbuild.Parse(b.Dockerfile, data, args, b.Target)
		if err != nil {
			// Unreadable here means unbuildable there; all the same,
			// a wider trust costs a question, a narrower one a hole.
			return []string{"."}
		}
		return df.ContextSources
	}
}

// trustedBuild is what the person trusted of a Dockerfile build's inputs
// (withBuildInputs), kept in a session's envRecord: the session's build
// reads its Dockerfile and context from the session's commit, which may
// not be the working tree's (--base, or edits not committed), and builds
// only when they are the ones trusted.
type trustedBuild struct {
	Dockerfile []byte `json:"dockerfile"`
	Listing    string `json:"listing"`
}

// trustedBuildOf is the trusted build inputs of p for b.
func trustedBuildOf(p RepoProposal, b *devcontainer.Build) *trustedBuild {
	tb := &trustedBuild{}
	if f, ok := p.File(b.Dockerfile); ok && f.Problem == "" {
		tb.Dockerfile = f.Data
	}
	for _, f := range p.Files {
		if strings.HasPrefix(f.Path, workspace.BuildContextLabel) && f.Problem == "" {
			tb.Listing = string(f.Data)
		}
	}
	return tb
}

// checkTrustedBuild says why the Dockerfile and context at commit are
// not the ones trusted (tb), or nil when they are. mr is locked.
func checkTrustedBuild(ctx context.Context, mr *workspace.Mirror, commit string, b *devcontainer.Build, dockerfile []byte, tb *trustedBuild) error {
	again := fmt.Sprintf("a session builds only what you trusted: check out %s and review it (`sandbar project trust`)", short(commit))
	if tb == nil || !bytes.Equal(tb.Dockerfile, dockerfile) {
		return fmt.Errorf("%s at %s is not the one you trusted; %s", b.Dockerfile, short(commit), again)
	}
	listing, err := mr.BuildContextListing(ctx, commit, b.Context, buildSources(b)(dockerfile))
	if err != nil {
		return err
	}
	if listing != tb.Listing {
		return fmt.Errorf("the files %s copies from its build context at %s are not the ones you trusted; %s", b.Dockerfile, short(commit), again)
	}
	return nil
}

// environmentConfig is the devcontainer.json of the environment kind's
// files that a session uses (repoEnvironment), parsed; nil when there is
// none or it does not parse.
func environmentConfig(s workspace.RepoSettings) *devcontainer.Config {
	for _, name := range []string{devcontainer.DefaultPath, ".devcontainer.json"} {
		f, ok := s.File(name)
		if !ok || f.Problem != "" || f.Data == nil {
			continue
		}
		cfg, err := devcontainer.Parse(name, f.Data)
		if err != nil {
			return nil
		}
		return cfg
	}
	return nil
}
