package devcontainer

import (
	"io/fs"
	"path"
	"strings"
	"unicode"

	"github.com/tailscale/hujson"
)

// config decodes the top-level object into cfg.
func (d *decoder) config(v *hujson.Value, cfg *Config) {
	ms, ok := d.object(v, topLevel, "{ \"image\": \"golang:1.23\" }")
	if !ok {
		return
	}
	// workspaceFolder first: ${containerWorkspaceFolder} in any other
	// field names it.
	for _, m := range ms {
		if m.name == "workspaceFolder" && !isNull(m.val) {
			cfg.WorkspaceFolder = d.workspaceFolder(m.val)
			if cfg.WorkspaceFolder != "" {
				d.workspace = cfg.WorkspaceFolder
			}
		}
	}
	var imageAt, buildAt *hujson.Value
	var legacyBuild *Build
	for _, m := range ms {
		if isNull(m.val) {
			continue // null is "not given", as the spec's tools read it
		}
		switch m.name {
		case "$schema", "workspaceFolder":
		case "name":
			if s, ok := d.str(m.val, "name", `"My project"`); ok {
				if strings.ContainsFunc(s, unicode.IsControl) || len(s) > 200 {
					// Shown in windows and the CLI: no escapes, one line.
					d.errorf(m.val.StartOffset, "name %s has control characters or is over 200 bytes — give a short plain name", quote(s))
				} else {
					cfg.Name = s
				}
			}
		case "image":
			imageAt = m.val
			cfg.Image = d.image(m.val)
		case "build":
			buildAt = m.val
			cfg.Build = d.build(m.val)
		case "dockerFile", "context":
			// The spec's older top-level spelling of build.dockerfile and
			// build.context.
			buildAt = m.val
			if legacyBuild == nil {
				legacyBuild = &Build{}
			}
			p, ok := d.str(m.val, m.name, `"Dockerfile"`)
			if !ok {
				continue
			}
			if m.name == "dockerFile" {
				legacyBuild.Dockerfile = d.repoPath(m.val, m.name, p)
			} else {
				legacyBuild.Context = d.repoPath(m.val, m.name, p)
			}
		case "features":
			cfg.Features = d.features(m.val)
		case "overrideFeatureInstallOrder":
			cfg.OverrideFeatureInstallOrder, _ = d.strs(m.val, m.name, `["ghcr.io/devcontainers/features/common-utils"]`)
		case "containerEnv":
			cfg.ContainerEnv = d.env(m.val, m.name, false)
		case "remoteEnv":
			cfg.RemoteEnv = d.env(m.val, m.name, true)
		case "onCreateCommand":
			cfg.OnCreateCommand = d.command(m.val, m.name)
		case "updateContentCommand":
			cfg.UpdateContentCommand = d.command(m.val, m.name)
		case "postCreateCommand":
			cfg.PostCreateCommand = d.command(m.val, m.name)
		case "postStartCommand":
			cfg.PostStartCommand = d.command(m.val, m.name)
		case "initializeCommand":
			d.unsupportedField(m.name)
			d.note(m.val.StartOffset, "initializeCommand runs on the person's machine in other tools; Sandbar never runs a repository's command outside its VM, so it does not run")
		case "forwardPorts":
			cfg.ForwardPorts = d.ports(m.val)
		case "remoteUser", "containerUser":
			u := d.user(m.val, m.name)
			if m.name == "remoteUser" {
				cfg.RemoteUser = u
			} else {
				cfg.ContainerUser = u
			}
		case "hostRequirements":
			cfg.HostRequirements = d.hostRequirements(m.val)
		case "mounts":
			cfg.Mounts = d.mounts(m.val)
		case "customizations":
			d.customizations(m.val)
		default:
			d.unsupportedField(join(topLevel, m.name))
		}
	}
	if legacyBuild != nil {
		if cfg.Build != nil {
			d.errorf(buildAt.StartOffset, "both build and the older dockerFile/context are given — keep build and move these into it")
		} else {
			if legacyBuild.Dockerfile == "" {
				d.errorf(buildAt.StartOffset, "context is given without dockerFile — name the Dockerfile in build.dockerfile")
			}
			if legacyBuild.Context == "" {
				legacyBuild.Context = path.Dir(d.file)
			}
			cfg.Build = legacyBuild
		}
	}
	if imageAt != nil && buildAt != nil {
		d.errorf(buildAt.StartOffset, "both image and a Dockerfile build are given — keep one, so it is clear what the session runs")
	}
	d.checkOverrideOrder(ms, cfg)
}

// image checks an image reference loosely: the puller gives the precise
// words about a name it cannot resolve.
func (d *decoder) image(v *hujson.Value) string {
	s, ok := d.str(v, "image", `"golang:1.23"`)
	if !ok {
		return ""
	}
	if s == "" || strings.ContainsFunc(s, isSpaceOrControl) {
		d.errorf(v.StartOffset, "image %s is not an image name — write one like \"golang:1.23\" or \"mcr.microsoft.com/devcontainers/go:1\"", quote(s))
		return ""
	}
	return s
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

func (d *decoder) build(v *hujson.Value) *Build {
	ms, ok := d.object(v, "build", `{ "dockerfile": "Dockerfile" }`)
	if !ok {
		return nil
	}
	b := &Build{}
	var contextGiven, dockerfileGiven bool
	for _, m := range ms {
		if isNull(m.val) {
			continue
		}
		field := join("build", m.name)
		switch m.name {
		case "dockerfile", "dockerFile":
			dockerfileGiven = true
			if p, ok := d.str(m.val, field, `"Dockerfile"`); ok {
				b.Dockerfile = d.repoPath(m.val, field, p)
			}
		case "context":
			if p, ok := d.str(m.val, field, `".."`); ok {
				b.Context = d.repoPath(m.val, field, p)
				contextGiven = true
			}
		case "args":
			b.Args = d.env(m.val, field, false)
		case "target":
			b.Target, _ = d.str(m.val, field, `"dev"`)
		default:
			d.unsupportedField(field)
		}
	}
	if !dockerfileGiven {
		d.errorf(v.StartOffset, "build names no dockerfile — add \"dockerfile\": \"Dockerfile\" (a path from this file's folder), or use image instead")
	}
	if !contextGiven {
		b.Context = path.Dir(d.file)
	}
	return b
}

// repoPath resolves p, relative to the devcontainer.json's folder, to a
// path inside the repository, refusing one that leaves it.
func (d *decoder) repoPath(v *hujson.Value, field, p string) string {
	if p == "" {
		d.errorf(v.StartOffset, "%s is empty — name a path from this file's folder, like \"Dockerfile\"", field)
		return ""
	}
	if path.IsAbs(p) || strings.HasPrefix(p, "~") {
		d.errorf(v.StartOffset, "%s %s is a path on this machine — a session never sees the host's files; name a path inside the repository, from this file's folder", field, quote(p))
		return ""
	}
	joined := path.Join(path.Dir(d.file), p)
	if !fs.ValidPath(joined) {
		d.errorf(v.StartOffset, "%s %s leads out of the repository — Sandbar builds only from files inside it; move what it needs into the repository", field, quote(p))
		return ""
	}
	return joined
}

// env decodes an object of NAME: "value". In remoteEnv a null value is
// kept as Unset, as the spec has it.
func (d *decoder) env(v *hujson.Value, field string, nullUnsets bool) []EnvVar {
	ms, ok := d.object(v, field, `{ "NAME": "value" }`)
	if !ok {
		return nil
	}
	var out []EnvVar
	for _, m := range ms {
		f := join(field, m.name)
		if m.name == "" || strings.ContainsAny(m.name, "=\x00") {
			d.errorf(m.nameOff, "%s is not a variable name — a name is not empty and has no '='", f)
			continue
		}
		if isNull(m.val) && nullUnsets {
			out = append(out, EnvVar{Name: m.name, Unset: true})
			continue
		}
		s, ok := d.str(m.val, f, `"value"`)
		if ok {
			out = append(out, EnvVar{Name: m.name, Value: s})
		}
	}
	return out
}

func (d *decoder) customizations(v *hujson.Value) {
	ms, ok := d.object(v, "customizations", `{ "vscode": { ... } }`)
	if !ok {
		return
	}
	for _, m := range ms {
		if m.name == "sandbar" {
			d.unsupportedField("customizations.sandbar")
		}
	}
}
