package session

import (
	"context"
	"path/filepath"
	"time"

	"sandbar/app/env/ociimage"
)

// envImageKeep is how long an image pulled for project environments is
// kept after its last use when no session boots on it any more.
const envImageKeep = 14 * 24 * time.Hour

// pruneEnvImages deletes the pulled images that no session boots on (one
// in the trash included: it may come back) and that nothing used for
// envImageKeep, keeping the most recently used one: the next session most
// likely needs it. An image is a few hundred MB to a few GB.
func (m *Manager) pruneEnvImages(ctx context.Context, now time.Time) {
	st := &ociimage.Store{Dir: m.cfg.Paths.EnvImages()}
	imgs, err := st.List() // most recently used first
	if err != nil || len(imgs) < 2 {
		return
	}
	used := map[string]bool{}
	for _, pattern := range []string{
		filepath.Join(m.cfg.Paths.Sessions(), "*", filepath.Base(m.cfg.Paths.SessionDir("x").RootImage())),
		filepath.Join(m.cfg.Paths.Trash(), "*", filepath.Base(m.cfg.Paths.SessionDir("x").RootImage())),
	} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if ri, err := readRootImage(f); err == nil && ri != nil {
				used[ri.Path] = true
			}
		}
	}
	for _, img := range imgs[1:] {
		if used[img.Path] || now.Sub(img.LastUse) < envImageKeep {
			continue
		}
		if err := st.Remove(ctx, img.Digest); err != nil {
			m.log.Warn("remove an unused environment image", "image", img.Ref, "err", err)
			continue
		}
		m.log.Info("removed an environment image no session used", "image", img.Ref, "digest", img.Digest, "size", img.Size)
	}
}
