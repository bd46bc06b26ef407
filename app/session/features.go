package session

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/features"
	"sandbar/app/workspace"
)

// A trusted devcontainer.json's features are fetched on the host when a
// session is started, before its VM boots (a feature that cannot be
// fetched fails the start, naming it, its registry and what to do), and
// installed in the VM as root, one stage each in their install order,
// after Sandbar's own preparing steps and before onCreateCommand. Each
// feature's folder reaches the guest on the install's stdin, as a gzip'd
// tar, into a fresh temporary folder where its install.sh runs with its
// options as variables. Its containerEnv joins the agent's environment
// and the installs after it. A restart installs nothing: its machine has
// them. The session's record keeps the set as fetched (their files
// included), so a restart has their environment, and a new machine made
// for the session could install the same features without the network.

// featureSet is what a session's features give its run.
type featureSet struct {
	// Env is the features' containerEnv for the agent, in install order,
	// each value filled in against the ones before it and the guest's.
	Env []devcontainer.EnvVar `json:"env,omitempty"`
	// Stages install them, one stage per feature.
	Stages [][]SetupStep `json:"stages,omitempty"`
	// Notes say in the session's log what is installed.
	Notes []string `json:"notes,omitempty"`
	// Names are "ID (version)" each, for a restart's log.
	Names []string `json:"names,omitempty"`
}

// maxFeatureBytes bounds what a session's features send to its VM, all
// of them together, as kept in its record.
const maxFeatureBytes = 16 << 20

// forRun is the stages and log notes of a run: a restart of the same
// machine installs nothing and says so.
func (s *featureSet) forRun(restart bool) ([][]SetupStep, []string) {
	if s == nil || len(s.Names) == 0 {
		return nil, nil
	}
	if restart {
		return nil, []string{"environment: features installed when the session was made: " + strings.Join(s.Names, ", ")}
	}
	return s.Stages, s.Notes
}

// rootPath is the PATH an install starts from: root's, with sbin.
const rootPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// fetchTimeout bounds fetching a session's features: a few KiB each.
const fetchTimeout = 2 * time.Minute

// featureTimeout bounds one feature's install.sh.
const featureTimeout = 20 * time.Minute

// featureInstall unpacks the tar on stdin into a fresh folder and runs
// the feature's install.sh there, as the devcontainer CLI does.
const featureInstall = `set -e; d=$(mktemp -d /tmp/sandbar-feature.XXXXXX); tar -xzf - -C "$d" --no-same-owner; cd "$d"; chmod +x ./install.sh; ./install.sh; cd /; rm -rf "$d"`

// fetchFeatures fetches the features cfg names: from registries, and
// "./folder" ones from the trusted files of review (never the working
// tree read again). nil when it names none.
func fetchFeatures(ctx context.Context, review RepoReview, cfg *devcontainer.Config, proxy func(*http.Request) (*url.URL, error)) ([]features.Feature, error) {
	if cfg == nil || len(cfg.Features) == 0 {
		return nil, nil
	}
	local := map[string][]byte{}
	for _, f := range review.Proposal(workspace.SettingsEnvironment).Files {
		if f.Problem == "" && f.Data != nil {
			local[f.Path] = f.Data
		}
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	fs, err := features.Fetch(ctx, cfg, features.Options{Local: local, LocalFrom: ".devcontainer", Proxy: proxy})
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("fetching the features took more than %s: check the registries' names and your network (%w)", fetchTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n(fix the features, or start in Sandbar's own environment: --env default)", cfg.File, err)
	}
	return fs, nil
}

// newFeatureSet turns fetched features into the run's stages and env.
func newFeatureSet(fs []features.Feature) (*featureSet, error) {
	set := &featureSet{}
	agent := map[string]string{}
	agentLookup := func(name string) string {
		if v, ok := agent[name]; ok {
			return v
		}
		return guestDefaults[name]
	}
	install := map[string]string{"PATH": rootPath}
	home := "/home/" + UserAgentName
	total := 0
	for _, f := range fs {
		tarball, err := features.Archive(f.Files)
		if err != nil {
			return nil, fmt.Errorf("feature %s: %w", f.ID, err)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(tarball)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		if total += gz.Len(); total > maxFeatureBytes {
			return nil, fmt.Errorf("the features add up to more than %d MiB: remove some of them from devcontainer.json", maxFeatureBytes>>20)
		}
		env := maps.Clone(install)
		maps.Copy(env, f.OptionEnv())
		maps.Copy(env, map[string]string{
			"_REMOTE_USER": UserAgentName, "_REMOTE_USER_HOME": home,
			"_CONTAINER_USER": UserAgentName, "_CONTAINER_USER_HOME": home,
		})
		set.Names = append(set.Names, fmt.Sprintf("%s (%s)", f.ID, f.Version()))
		name := fmt.Sprintf("feature %s (%s)", f.ID, f.Version())
		set.Stages = append(set.Stages, []SetupStep{{
			Name: name, Done: name + " installed",
			Argv: []string{"sh", "-c", featureInstall, "sandbar-feature"},
			Env:  env, Cwd: "/", User: "root", Timeout: featureTimeout, Stdin: gz.Bytes(),
		}})
		installLookup := func(name string) string { return install[name] }
		next := maps.Clone(install)
		for _, v := range f.Meta.ContainerEnv {
			next[v.Name] = os.Expand(v.Value, installLookup)
			val := os.Expand(v.Value, agentLookup)
			agent[v.Name] = val
			set.Env = append(set.Env, devcontainer.EnvVar{Name: v.Name, Value: val})
		}
		install = next
		note := fmt.Sprintf("environment: feature %s (%s) from %s", f.ID, f.Version(), f.Source)
		if f.Digest != "" {
			note += " " + f.Digest
		}
		if f.RequiredBy != "" {
			note += ", which " + f.RequiredBy + " depends on"
		}
		if len(f.Options) > 0 {
			var opts []string
			for _, o := range f.Options {
				opts = append(opts, o.Name+"="+o.Value)
			}
			note += "; options " + strings.Join(opts, " ")
		}
		set.Notes = append(set.Notes, note)
		if len(f.Meta.Unsupported) > 0 {
			set.Notes = append(set.Notes, fmt.Sprintf("environment: feature %s: not supported, so not acted on: %s", f.ID, strings.Join(f.Meta.Unsupported, ", ")))
		}
	}
	return set, nil
}

// withFeatures puts the features' stages after Sandbar's preparing steps
// (the first stage, when cfg has any) and before the file's commands.
func withFeatures(stages [][]SetupStep, cfg *devcontainer.Config, features [][]SetupStep) [][]SetupStep {
	if len(features) == 0 {
		return stages
	}
	at := 0
	if len(prepareSteps(cfg)) > 0 {
		at = 1
	}
	out := append([][]SetupStep{}, stages[:at]...)
	out = append(out, features...)
	return append(out, stages[at:]...)
}
