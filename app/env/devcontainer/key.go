package devcontainer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// KeyInput is everything a prepared environment is made from. Two
// preparations with equal inputs make the same environment, so one is
// kept per Key.
//
// In it, and why:
//   - ImageDigest: the image the environment starts from (a pulled image's
//     manifest digest, or a built one's), so a new image makes a new one;
//   - Features with their options, sorted by id and option name: their
//     install scripts run in the environment (the install order follows
//     from the set and the features' own metadata). A caller that resolves
//     a feature's tag to a digest should put the digest-pinned id here, so
//     a feature republished under the same tag makes a new environment;
//   - OnCreate, UpdateContent, PostCreate: the creation commands it runs;
//   - ContainerEnv, RemoteEnv (sorted by name), RemoteUser, ContainerUser
//     and the workspace folder: the environment and user those commands
//     and install scripts run with, which change what they leave behind;
//   - Commit: the repository commit it is prepared on, whose files the
//     commands read (a lock file, go.sum).
//
// Not in it: postStartCommand (it runs in every session, not in
// preparing), forwardPorts, hostRequirements and mounts (they shape a
// session, not what preparing leaves), the file's name, comments, layout
// and key order.
type KeyInput struct {
	ImageDigest     string
	Features        []Feature
	OnCreate        Command
	UpdateContent   Command
	PostCreate      Command
	ContainerEnv    []EnvVar
	RemoteEnv       []EnvVar
	RemoteUser      string
	ContainerUser   string
	WorkspaceFolder string
	Commit          string
}

// KeyInput gives the key's inputs from the file, with the image digest and
// commit the caller has.
func (c *Config) KeyInput(imageDigest, commit string) KeyInput {
	return KeyInput{
		ImageDigest:     imageDigest,
		Features:        c.Features,
		OnCreate:        c.OnCreateCommand,
		UpdateContent:   c.UpdateContentCommand,
		PostCreate:      c.PostCreateCommand,
		ContainerEnv:    c.ContainerEnv,
		RemoteEnv:       c.RemoteEnv,
		RemoteUser:      c.RemoteUser,
		ContainerUser:   c.ContainerUser,
		WorkspaceFolder: c.ContainerWorkspaceFolder(),
		Commit:          commit,
	}
}

// Key is the hex SHA-256 of the inputs in a canonical form: the same for
// the same inputs whatever their order in the file, different when any
// input differs. Every string is written with its length first, so no two
// different inputs write the same bytes.
func Key(in KeyInput) string {
	h := sha256.New()
	w := func(ss ...string) {
		for _, s := range ss {
			var n [binary.MaxVarintLen64]byte
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
			h.Write([]byte(s))
		}
	}
	command := func(name string, c Command) {
		w(name)
		switch {
		case c.Shell != "":
			w("shell", c.Shell)
		case len(c.Argv) > 0:
			w("argv", strconv.Itoa(len(c.Argv)))
			w(c.Argv...)
		}
		// The object form's parts run together, so their order is not an
		// input; their names are unique in the file.
		parts := slices.Clone(c.Parts)
		slices.SortFunc(parts, func(a, b NamedCommand) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range parts {
			w("part", p.Name, p.Shell, strconv.Itoa(len(p.Argv)))
			w(p.Argv...)
		}
		w("end")
	}
	env := func(name string, vs []EnvVar) {
		w(name, strconv.Itoa(len(vs)))
		vs = slices.Clone(vs)
		slices.SortStableFunc(vs, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
		for _, v := range vs {
			w(v.Name, v.Value, strconv.FormatBool(v.Unset))
		}
	}

	w("sandbar environment key 1", "image", in.ImageDigest)
	features := slices.Clone(in.Features)
	slices.SortStableFunc(features, compareFeatures)
	w("features", strconv.Itoa(len(features)))
	for _, f := range features {
		opts := sortedOptions(f.Options)
		w(f.ID, strconv.Itoa(len(opts)))
		for _, o := range opts {
			w(o.Name, o.Value, strconv.FormatBool(o.Bool))
		}
	}
	command("onCreateCommand", in.OnCreate)
	command("updateContentCommand", in.UpdateContent)
	command("postCreateCommand", in.PostCreate)
	env("containerEnv", in.ContainerEnv)
	env("remoteEnv", in.RemoteEnv)
	w("remoteUser", in.RemoteUser, "containerUser", in.ContainerUser)
	w("workspaceFolder", in.WorkspaceFolder, "commit", in.Commit)
	return hex.EncodeToString(h.Sum(nil))
}
