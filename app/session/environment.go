package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/ociimage"
	"sandbar/app/workspace"
)

// A session's environment comes from the repository's devcontainer.json
// once the person has trusted it (RepoReview), else it is Sandbar's own
// image. What the file asks of a session is turned here into the agent's
// environment, its default limits and the setup steps that run before
// the agent (see setup.go): each new session is a new machine, so it
// runs onCreateCommand, updateContentCommand and postCreateCommand; every
// start, a restart too, runs postStartCommand.

// The environments a start may ask for (Options.Env).
const (
	// EnvProject is the project's environment: the repository's trusted
	// devcontainer.json when it has one (the default).
	EnvProject = "project"
	// EnvDefault is Sandbar's own image, whatever the project has.
	EnvDefault = "default"
)

// envRecord is a session's copy of the devcontainer.json it was created
// with, kept in its directory so that a restart runs the same one even
// when the repository's has changed since.
type envRecord struct {
	File string `json:"file"`
	Data []byte `json:"data"`
	// Features are the features fetched at creation, ready to install
	// (see features.go): a restart has their environment without
	// fetching again.
	Features *featureSet `json:"features,omitempty"`
	// Build is what the person trusted of the file's Dockerfile build,
	// checked against what the session's commit holds before it builds.
	Build *trustedBuild `json:"build,omitempty"`
}

// repoEnvironment is the trusted devcontainer.json of a review: nil when
// the repository has none or the person has not trusted it (the review's
// notes say so). A file that does not parse is an error naming its line
// and column.
func repoEnvironment(review RepoReview) (*envRecord, *devcontainer.Config, error) {
	p := review.Proposal(workspace.SettingsEnvironment)
	if p.State != TrustTrusted {
		return nil, nil, nil
	}
	for _, name := range []string{devcontainer.DefaultPath, ".devcontainer.json"} {
		f, ok := p.File(name)
		if !ok || f.Problem != "" || f.Data == nil {
			continue
		}
		cfg, err := devcontainer.Parse(name, f.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("%w\n(fix the file, or start in Sandbar's own environment: --env default)", err)
		}
		rec := &envRecord{File: name, Data: f.Data}
		if cfg.Build != nil && cfg.Image == "" {
			rec.Build = trustedBuildOf(p, cfg.Build)
		}
		return rec, cfg, nil
	}
	return nil, nil, nil
}

// keepEnvironment writes rec to the session's directory.
func keepEnvironment(path string, rec *envRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("keep the session's copy of %s: %w", rec.File, err)
	}
	return nil
}

// keptEnvironment reads what keepEnvironment wrote: nil when the session
// runs in Sandbar's own environment. Its features are installed already:
// the set has their environment and no stages.
func keptEnvironment(path string) (*devcontainer.Config, *featureSet, error) {
	rec, err := readEnvRecord(path)
	if rec == nil || err != nil {
		return nil, nil, err
	}
	cfg, err := devcontainer.Parse(rec.File, rec.Data)
	if err != nil {
		return nil, nil, err
	}
	return cfg, rec.Features, nil
}

// readEnvRecord reads what keepEnvironment wrote, unparsed: nil when the
// session runs in Sandbar's own environment.
func readEnvRecord(path string) (*envRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the session's environment: %w", err)
	}
	var rec envRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read the session's environment %s: %w", path, err)
	}
	return &rec, nil
}

// guestDefaults is what ${containerEnv:NAME} finds for a name the file
// does not set: the agent's environment in Sandbar's guest.
var guestDefaults = map[string]string{
	"PATH": "/opt/agent/bin:/usr/local/bin:/usr/bin:/bin",
	"HOME": "/home/" + UserAgentName,
	"USER": UserAgentName,
}

// UserAgentName is the agent's user in Sandbar's own image; agentUID is
// its uid and group in every image, the workspace's owner (on another
// image's root the account may be named otherwise: node, vscode).
const (
	UserAgentName = "agent"
	agentUID      = "1000:1000"
)

// environmentEnv is the environment the file gives the agent and its
// setup steps: the features' containerEnv (filled in already), then the
// file's containerEnv, then remoteEnv over it, with ${containerEnv:NAME}
// filled in.
func environmentEnv(cfg *devcontainer.Config, featureEnv []devcontainer.EnvVar, imageEnv []string) map[string]string {
	env := map[string]string{}
	for _, v := range featureEnv {
		env[v.Name] = v.Value
	}
	image := map[string]string{}
	for _, kv := range imageEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			image[k] = v
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := env[name]; ok {
			return v, true
		}
		if v, ok := image[name]; ok {
			return v, true
		}
		v, ok := guestDefaults[name]
		return v, ok
	}
	for _, layer := range [][]devcontainer.EnvVar{cfg.ContainerEnv, cfg.RemoteEnv} {
		for _, v := range layer {
			if v.Unset {
				delete(env, v.Name)
				continue
			}
			env[v.Name] = devcontainer.ExpandContainerEnv(v.Value, lookup)
		}
	}
	return env
}

// environmentSetup is the setup a session runs before its agent: its
// stages in order, the steps of a stage together. A restart (its machine
// was made before) runs only what every start runs.
func environmentSetup(cfg *devcontainer.Config, env map[string]string, restart bool) [][]SetupStep {
	var stages [][]SetupStep
	if prep := prepareSteps(cfg); len(prep) > 0 {
		stages = append(stages, prep)
	}
	cmds := []struct {
		name string
		cmd  devcontainer.Command
	}{
		{"onCreateCommand", cfg.OnCreateCommand},
		{"updateContentCommand", cfg.UpdateContentCommand},
		{"postCreateCommand", cfg.PostCreateCommand},
		{"postStartCommand", cfg.PostStartCommand},
	}
	if restart {
		cmds = cmds[3:]
	}
	for _, c := range cmds {
		var stage []SetupStep
		for _, run := range c.cmd.Runs() {
			name := c.name
			if run.Name != "" {
				name += " (" + run.Name + ")"
			}
			stage = append(stage, SetupStep{Name: name, Argv: run.Argv, Env: env, Cwd: devcontainer.GuestWorkspace})
		}
		if len(stage) > 0 {
			stages = append(stages, stage)
		}
	}
	return stages
}

// prepareSteps readies, as root, what the file's commands expect of the
// machine: its volume and tmpfs mounts (folders on the session's own
// disk, the agent's) and the link from its workspaceFolder to /workspace.
// Paths are the checked ones of devcontainer.Parse, passed as arguments,
// never pasted into the script.
func prepareSteps(cfg *devcontainer.Config) []SetupStep {
	var steps []SetupStep
	var vols, tmpfs []string
	for _, m := range cfg.Mounts {
		if m.Type == devcontainer.MountTmpfs {
			tmpfs = append(tmpfs, m.Target)
		} else {
			vols = append(vols, m.Target)
		}
	}
	if len(vols) > 0 {
		steps = append(steps, SetupStep{Name: "mounts (volumes on the session's disk)", User: "root",
			Argv: append([]string{"sh", "-c", `set -e; for d; do mkdir -p "$d"; chown ` + agentUID + ` "$d"; done`, "sandbar-volumes"}, vols...)})
	}
	if len(tmpfs) > 0 {
		steps = append(steps, SetupStep{Name: "mounts (tmpfs)", User: "root",
			Argv: append([]string{"sh", "-c", `set -e; for d; do mkdir -p "$d"; mountpoint -q "$d" || mount -t tmpfs -o mode=1777 tmpfs "$d"; done`, "sandbar-tmpfs"}, tmpfs...)})
	}
	if link := cfg.WorkspaceLink(); link != "" {
		steps = append(steps, SetupStep{Name: "workspaceFolder (" + link + " → " + devcontainer.GuestWorkspace + ")", User: "root",
			Argv: []string{"sh", "-c", `set -e; mkdir -p "$(dirname "$1")"; [ -L "$1" ] || [ ! -e "$1" ] || rmdir "$1"; ln -sfn "$2" "$1"`, "sandbar-link", link, devcontainer.GuestWorkspace}})
	}
	return steps
}

// environmentNotes is what a session's log says of its environment: the
// file, what of it Sandbar does not act on, and the file's own notes.
func environmentNotes(cfg *devcontainer.Config) []string {
	notes := []string{"environment: " + cfg.File + " (trusted)"}
	if cfg.Build != nil {
		notes = append(notes, fmt.Sprintf("environment: %s builds its image from %s: built in a VM of Sandbar's own image (buildah), never on this machine, and cached", cfg.File, cfg.Build.Dockerfile))
	}
	if len(cfg.Unsupported) > 0 {
		notes = append(notes, "environment: not supported, so not acted on: "+strings.Join(cfg.Unsupported, ", "))
	}
	for _, p := range cfg.ForwardPorts {
		if p.Host != "" {
			notes = append(notes, fmt.Sprintf("environment: forwardPorts %s:%d names another host: only the session's own ports are published", p.Host, p.Port))
		}
	}
	return append(notes, cfg.Notes...)
}

// useEnvironment makes the run's agent and setup follow cfg and its
// features (nil: Sandbar's own environment, nothing to do). Sandbar's own
// variables (the broker's, the secrets) win over the file's.
func (r *run) useEnvironment(cfg *devcontainer.Config, feats *featureSet) {
	if cfg == nil {
		return
	}
	if feats == nil {
		feats = &featureSet{}
	}
	r.envCfg, r.envFeatures, r.envFeatSet, r.sandbarEnv = cfg, feats.Env, feats, maps.Clone(r.env)
	env := map[string]string{}
	// A restart boots the image its session was made on: its variables
	// are known now; a new session's once it is pulled (pullImage).
	var imageEnv []string
	if ri, err := readRootImage(r.dir.RootImage()); err == nil && ri != nil {
		imageEnv = ri.Env
	}
	r.stepEnv = env
	r.applyEnvVars(imageEnv)
	// A restart from the saved work is a new machine: its commands
	// run as a new session's do.
	fresh := !r.restart || r.fromSaved != ""
	stages, notes := feats.forRun(!fresh)
	r.setupSteps = withFeatures(environmentSetup(cfg, env, !fresh), cfg, stages)
	if r.restart && fresh {
		// A new machine on the prepared environment the session was
		// made on: its creation work is there; the saved work is
		// another commit, so updateContentCommand runs.
		if rec, err := readPreparedRecord(r.dir.PreparedEnv()); err == nil && rec != nil {
			r.setupSteps = sessionOnPrepared(cfg, env, true)
		}
	}
	r.envNotes = append(environmentNotes(cfg), notes...)
	r.envImage, r.envFile = cfg.Image, cfg.File
	r.envUser = cfg.RemoteUser
	if r.envUser == "" {
		r.envUser = cfg.ContainerUser
	}
}

// applyEnvVars fills the environment's variables in, the image's known
// (${containerEnv:NAME} may name one of them): in the setup steps' map,
// which they share, and in the agent's, where Sandbar's own win.
func (r *run) applyEnvVars(imageEnv []string) {
	env := environmentEnv(r.envCfg, r.envFeatures, imageEnv)
	clear(r.stepEnv)
	maps.Copy(r.stepEnv, env)
	merged := maps.Clone(env)
	maps.Copy(merged, r.sandbarEnv)
	r.env = merged
}

// pullImage pulls the image a new session's devcontainer.json asks for
// (none: nothing to do) and records it as the session's root, for this
// boot and every restart. The pull's progress is the session's reason.
// A registry that cannot be reached is no dead end when the image was
// pulled before: that one serves, and the log says so.
func (r *run) pullImage(ctx context.Context) error {
	if r.envImage == "" || r.root != nil {
		return nil
	}
	store := &ociimage.Store{Dir: r.m.cfg.Paths.EnvImages()}
	began := time.Now()
	var last time.Time
	img, err := store.Pull(ctx, r.envImage, ociimage.PullOptions{Proxy: r.m.cfg.Proxy.HTTPProxy, Progress: func(p ociimage.Progress) {
		if p.Cached || time.Since(last) < 500*time.Millisecond && p.LayersDone < p.LayersTotal {
			return
		}
		last = time.Now()
		r.m.hub.publish(Event{Session: r.id, Time: last, Kind: EventState, State: StateProvisioning,
			Reason: fmt.Sprintf("pulling the image %s: %d of %d MB, layer %d of %d", r.envImage, p.BytesDone>>20, max(p.BytesTotal, p.BytesDone)>>20, p.LayersDone, p.LayersTotal)})
	}})
	how := fmt.Sprintf("pulled in %s", time.Since(began).Round(time.Millisecond))
	if errors.Is(err, ociimage.ErrUnreachable) {
		if stored, ok := r.m.storedImage(r.envImage); ok {
			r.systemLine(fmt.Sprintf("environment: the image's registry cannot be reached (%v); using %s as pulled on %s", err, r.envImage, stored.Pulled.Format("2006-01-02 15:04")))
			img, err, how = stored, nil, "as pulled before"
		}
	}
	if err != nil {
		return fmt.Errorf("environment: the image %s that %s asks for: %w (or start in Sandbar's own image: --env default)", r.envImage, r.envFile, err)
	}
	ri := &RootImage{Path: img.Path, Name: r.envImage, Digest: img.Digest, User: r.envUser,
		Env: img.Config.Env, WorkingDir: img.Config.WorkingDir}
	if ri.User == "" {
		ri.User = img.Config.User
	}
	if err := ri.check(); err != nil {
		return fmt.Errorf("environment: the image %s: %w", r.envImage, err)
	}
	if err := writeRootImage(r.dir.RootImage(), ri); err != nil {
		return err
	}
	_ = store.Touch(img.Digest)
	r.applyEnvVars(ri.Env)
	r.systemLine(fmt.Sprintf("environment: image %s (%s, %s, %d MB) %s", r.envImage, img.Digest, img.Platform, img.Size>>20, how))
	return nil
}
