package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/ociimage"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// EnvironmentView is a project's environment as `sandbar env` and the
// project's settings show it: where it comes from, whether the person
// trusted it, what it asks for, and what of it is on this machine.
type EnvironmentView struct {
	Project store.Project `json:"project"`
	// Source is "devcontainer" (the repository's trusted file) or
	// "default" (Sandbar's own image).
	Source string `json:"source"`
	// File is the repository's devcontainer.json, "" when it has none;
	// Trust is its trust state (TrustTrusted and the rest).
	File  string `json:"file,omitempty"`
	Trust string `json:"trust,omitempty"`
	// Error says why a trusted file cannot be used (it does not parse).
	Error string `json:"error,omitempty"`
	// Image is the image the file asks for ("" for Sandbar's own), and
	// Pulled the one of that name on this machine, if any.
	Image  string          `json:"image,omitempty"`
	Pulled *ociimage.Image `json:"pulled,omitempty"`
	// Features are the features' ids, in the file's order.
	Features []string `json:"features,omitempty"`
	// Commands are the lifecycle commands the file gives, by name, as
	// a person reads them.
	Commands []EnvCommand `json:"commands,omitempty"`
	// Notes are the file's unsupported fields and its own notes.
	Notes []string `json:"notes,omitempty"`
	// Prepared is the state of the project's prepared environment: nil
	// when the environment has nothing to prepare (no trusted file, or
	// one with no features and no creation commands).
	Prepared *PreparedView `json:"prepared,omitempty"`
}

// EnvCommand is one lifecycle command of a devcontainer.json.
type EnvCommand struct {
	Name string `json:"name"`
	// When says when it runs, in words.
	When string   `json:"when"`
	Runs []string `json:"runs"`
}

// Environment reads a project's environment: the repository's
// devcontainer.json as the working tree has it now and its trust, and
// the image of its name in this machine's store.
func (m *Manager) Environment(ctx context.Context, projectRef string) (EnvironmentView, error) {
	review, err := m.RepoTrust(ctx, projectRef)
	if err != nil {
		return EnvironmentView{}, err
	}
	v := EnvironmentView{Project: review.Project, Source: "default"}
	p := review.Proposal(workspace.SettingsEnvironment)
	if p.State == TrustAbsent {
		return v, nil
	}
	v.Trust = p.State
	var file string
	var data []byte
	for _, name := range []string{devcontainer.DefaultPath, ".devcontainer.json"} {
		if f, ok := p.File(name); ok {
			file, data = name, f.Data
			if f.Problem != "" {
				v.Error = f.Problem
			}
			break
		}
	}
	v.File = file
	if file == "" || v.Error != "" {
		return v, nil
	}
	cfg, err := devcontainer.Parse(file, data)
	if err != nil {
		v.Error = err.Error()
		return v, nil
	}
	if p.State == TrustTrusted {
		v.Source = "devcontainer"
	}
	v.Image = cfg.Image
	if cfg.Image != "" {
		if img, ok := m.storedImage(cfg.Image); ok {
			v.Pulled = &img
		}
	}
	for _, f := range cfg.Features {
		v.Features = append(v.Features, f.ID)
	}
	for _, c := range []struct {
		name, when string
		cmd        devcontainer.Command
	}{
		{"onCreateCommand", "once, in the prepared environment", cfg.OnCreateCommand},
		{"updateContentCommand", "in the prepared environment, and in a session on another commit", cfg.UpdateContentCommand},
		{"postCreateCommand", "once, in the prepared environment", cfg.PostCreateCommand},
		{"postStartCommand", "every start, a restart too", cfg.PostStartCommand},
	} {
		if c.cmd.IsZero() {
			continue
		}
		ec := EnvCommand{Name: c.name, When: c.when}
		for _, r := range c.cmd.Runs() {
			line := strings.Join(r.Argv, " ")
			if r.Name != "" {
				line = r.Name + ": " + line
			}
			ec.Runs = append(ec.Runs, line)
		}
		v.Commands = append(v.Commands, ec)
	}
	if b := cfg.Build; b != nil && cfg.Image == "" {
		v.Notes = append(v.Notes, fmt.Sprintf("build: %s, context %s: built in a VM (buildah, never on this machine) when a session starts, and cached", b.Dockerfile, b.Context))
	}
	if len(cfg.Unsupported) > 0 {
		v.Notes = append(v.Notes, "not supported, so not acted on: "+strings.Join(cfg.Unsupported, ", "))
	}
	v.Notes = append(v.Notes, cfg.Notes...)
	if v.Source == "devcontainer" && createsWork(cfg) {
		pv, err := m.preparedView(v.Project)
		if err != nil {
			return v, err
		}
		v.Prepared = &pv
	}
	return v, nil
}

// storedImage is the most recently used image in this machine's store
// pulled by ref, if any.
func (m *Manager) storedImage(ref string) (ociimage.Image, bool) {
	imgs, err := (&ociimage.Store{Dir: m.cfg.Paths.EnvImages()}).List()
	if err != nil {
		return ociimage.Image{}, false
	}
	for _, img := range imgs { // most recently used first
		if img.Ref == ref {
			return img, true
		}
	}
	return ociimage.Image{}, false
}

// Words is the view as `sandbar env` prints it: one fact a line. The
// repository's text in it is for the caller to escape.
func (v EnvironmentView) Words() []string {
	var out []string
	switch {
	case v.File == "":
		out = append(out, "environment: Sandbar's own image (the repository has no devcontainer.json)")
	case v.Source == "devcontainer":
		out = append(out, "environment: "+v.File+" (trusted)")
	default:
		out = append(out, fmt.Sprintf("environment: Sandbar's own image: the repository's %s is %s", v.File, TrustStateWords(v.Trust)))
	}
	if v.Error != "" {
		out = append(out, "cannot be used: "+v.Error)
	}
	if v.Image != "" {
		if v.Pulled != nil {
			out = append(out, fmt.Sprintf("image: %s (%s, %s, %d MB, pulled %s)", v.Image, v.Pulled.Digest, v.Pulled.Platform, v.Pulled.Size>>20, v.Pulled.Pulled.Format("2006-01-02 15:04")))
		} else {
			out = append(out, "image: "+v.Image+" (not on this machine yet: the first session pulls it, or sandbar env build)")
		}
	}
	if len(v.Features) > 0 {
		out = append(out, "features: "+strings.Join(v.Features, ", "))
	}
	for _, c := range v.Commands {
		for _, r := range c.Runs {
			out = append(out, fmt.Sprintf("%s (%s): %s", c.Name, c.When, r))
		}
	}
	out = append(out, v.Notes...)
	if v.Prepared != nil {
		out = append(out, v.Prepared.Words()...)
	}
	return out
}

// Words is the prepared state as `sandbar env` prints it.
func (p PreparedView) Words() []string {
	var out []string
	switch p.State {
	case PrepNone:
		out = append(out, "prepared: not yet (the next session prepares it and waits, or sandbar env build)")
	case PrepPreparing:
		out = append(out, fmt.Sprintf("prepared: preparing now on %s (key %s, since %s): %s", short(p.Commit), p.KeyShort, p.Started.Local().Format("15:04:05"), p.Step))
	case PrepReady:
	case PrepFailed:
		out = append(out, fmt.Sprintf("prepared: FAILED on %s (key %s): %s", short(p.Commit), p.KeyShort, p.Error))
		out = append(out, "see its log: sandbar env logs; fix the file, then sandbar env build --rebuild")
	}
	if s := p.Serving; s != nil {
		out = append(out, fmt.Sprintf("prepared: ready, made %s on %s (key %s, %s, %s to prepare of which %s its commands), last used %s",
			s.Made.Local().Format("2006-01-02 15:04"), short(s.Commit), s.KeyShort, humanSize(s.Size), s.Took.Round(time.Second), s.SetupTook.Round(time.Second), s.LastUse.Local().Format("2006-01-02 15:04")))
	} else if p.State == PrepFailed {
		out = append(out, "no prepared environment is ready: the project's sessions fail until one is (or start one in Sandbar's own image: --env default)")
	}
	return out
}
