package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"sandbar/app/env/ociimage"
)

// The pulled images of project environments as Settings → Storage lists
// them, and their removal. Pruning (envprune.go) removes the old ones by
// itself; this is the person's own Remove.

// EnvImage is one image pulled for project environments, kept on this
// machine as a read-only disk.
type EnvImage struct {
	// Ref is the reference it was pulled by; Digest its manifest digest;
	// Platform os/arch; Source "registry", "docker" or "podman".
	Ref      string `json:"ref"`
	Digest   string `json:"digest"`
	Platform string `json:"platform"`
	Source   string `json:"source"`
	// Size is its disk's bytes; Pulled when it was written here, LastUse
	// when a session or a preparation last used it.
	Size    int64     `json:"size"`
	Pulled  time.Time `json:"pulled"`
	LastUse time.Time `json:"last_use"`
	// InUse says what still needs it (a session's or a prepared
	// environment's), "" when nothing: Remove refuses it then.
	InUse string `json:"in_use,omitempty"`
}

// EnvImages lists the images pulled for project environments, the most
// recently used first.
func (m *Manager) EnvImages(ctx context.Context) ([]EnvImage, error) {
	imgs, err := (&ociimage.Store{Dir: m.cfg.Paths.EnvImages()}).List()
	if err != nil {
		return nil, err
	}
	users := m.envImageUsers(ctx)
	out := make([]EnvImage, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, EnvImage{Ref: img.Ref, Digest: img.Digest, Platform: img.Platform, Source: img.Source,
			Size: img.Size, Pulled: img.Pulled, LastUse: img.LastUse, InUse: users[img.Digest]})
	}
	return out, nil
}

// RemoveEnvImage deletes a pulled image by its digest. One that a
// session (in the trash too: it may come back) or a ready prepared
// environment boots on is refused, saying which: their disks are layers
// over it.
func (m *Manager) RemoveEnvImage(ctx context.Context, digest string) error {
	st := &ociimage.Store{Dir: m.cfg.Paths.EnvImages()}
	img, err := st.Get(digest)
	if errors.Is(err, ociimage.ErrNotStored) {
		return fmt.Errorf("no image %s is kept on this machine (Settings → Storage lists them): %w", digest, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if who := m.envImageUsers(ctx)[img.Digest]; who != "" {
		return fmt.Errorf("%s is still needed: %s boots on it; remove that first: %w", img.Ref, who, ErrState)
	}
	return st.Remove(ctx, digest)
}

// envImageUsers says, by image digest, what boots on each image: a
// session (by its id) or a project's ready prepared environment.
func (m *Manager) envImageUsers(ctx context.Context) map[string]string {
	users := map[string]string{}
	st := &ociimage.Store{Dir: m.cfg.Paths.EnvImages()}
	byPath := map[string]string{}
	if imgs, err := st.List(); err == nil {
		for _, img := range imgs {
			byPath[img.Path] = img.Digest
		}
	}
	name := filepath.Base(m.cfg.Paths.SessionDir("x").RootImage())
	for _, dir := range []string{m.cfg.Paths.Sessions(), m.cfg.Paths.Trash()} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", name))
		for _, f := range files {
			ri, err := readRootImage(f)
			if err != nil || ri == nil {
				continue
			}
			if d, ok := byPath[ri.Path]; ok && users[d] == "" {
				users[d] = "session " + shortKey(filepath.Base(filepath.Dir(f)))
				if dir == m.cfg.Paths.Trash() {
					users[d] += " (in the trash)"
				}
			}
		}
	}
	projects, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		return users
	}
	pst := m.preparedStore()
	for _, p := range projects {
		envs, err := pst.List(envName(p.ID))
		if err != nil {
			continue
		}
		for _, e := range envs {
			if e.ImageDigest != "" && e.Path != "" && users[e.ImageDigest] == "" {
				users[e.ImageDigest] = "the prepared environment " + shortKey(e.Key) + " of project " + p.Name
			}
		}
	}
	return users
}
