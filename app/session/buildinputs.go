package session

import (
	"context"
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
	args := map[string]string{}
	for _, a := range cfg.Build.Args {
		args[a.Name] = a.Value
	}
	sources := func(data []byte) []string {
		df, err := dockerbuild.Parse(cfg.Build.Dockerfile, data, args, cfg.Build.Target)
		if err != nil {
			// Unreadable here means unbuildable there; all the same,
			// a wider trust costs a question, a narrower one a hole.
			return []string{"."}
		}
		return df.ContextSources
	}
	s.Files = append(s.Files, s.BuildInputs(ctx, root, cfg.Build.Dockerfile, cfg.Build.Context, sources)...)
	slices.SortFunc(s.Files, func(a, b workspace.SettingsFile) int { return strings.Compare(a.Path, b.Path) })
	return s
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
