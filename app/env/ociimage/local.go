package ociimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// inspectTimeout bounds asking a local Docker or Podman about an image,
// so that a daemon that hangs costs seconds, not the pull.
const inspectTimeout = 15 * time.Second

var hexID = regexp.MustCompile(`^(sha256:)?([a-f0-9]{64})$`)

// localImage is what `image inspect` says of an image in a local store.
type localImage struct {
	id   string // sha256:<hex>, the config's digest
	plat v1.Platform
	size int64 // unpacked bytes, as the tool counts them
}

// pullLocal takes the image from the first local Docker or Podman whose
// `image inspect` finds it for the wanted platform. ok is false when none
// has it; then the registry is asked.
func (s *Store) pullLocal(ctx context.Context, p *pull) (Image, bool, error) {
	tools := p.opts.LocalTools
	if tools == nil {
		tools = []string{"docker", "podman"}
	}
	for _, tool := range tools {
		bin, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		li, err := inspectLocal(ctx, bin, p.refStr)
		if err != nil {
			slog.Debug("ociimage: not in the local store", "tool", tool, "ref", p.refStr, "err", err)
			continue
		}
		if !platformMatches(li.plat, p.plat) {
			slog.Info("ociimage: local image is for another platform; pulling from the registry", "tool", tool, "ref", p.refStr, "has", li.plat.String(), "want", p.plat.String())
			continue
		}
		if li.size > p.max {
			return Image{}, true, tooLarge(p, fmt.Sprintf("(in %s) is %s, over", tool, humanBytes(li.size)))
		}
		img, err := s.write(ctx, p, li.id, filepath.Base(tool), func(tmp string) (v1.Image, int64, error) {
			tarPath := filepath.Join(tmp, "image.tar")
			if err := saveLocal(ctx, bin, p.refStr, tarPath); err != nil {
				return nil, 0, err
			}
			img, err := tarball.ImageFromPath(tarPath, nil)
			if err != nil {
				return nil, 0, fmt.Errorf("read the image %s saved by %s: %w", p.refStr, tool, err)
			}
			cfg, err := img.ConfigName()
			if err != nil {
				return nil, 0, fmt.Errorf("read the image %s saved by %s: %w", p.refStr, tool, err)
			}
			if cfg.String() != li.id {
				return nil, 0, fmt.Errorf("the image %s changed in %s while it was saved (%s, now %s): pull again", p.refStr, tool, li.id, cfg)
			}
			return img, li.size, nil
		})
		return img, true, err
	}
	return Image{}, false, nil
}

// inspectLocal asks bin (docker or podman) about ref.
func inspectLocal(ctx context.Context, bin, ref string) (localImage, error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "image", "inspect", "--", ref)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return localImage{}, fmt.Errorf("%s image inspect: %w: %s", bin, err, strings.TrimSpace(errb.String()))
	}
	return parseInspect(out.Bytes())
}

// parseInspect reads `image inspect`'s JSON, the same keys in Docker and
// Podman (a template would not be: Docker's is .Id, Podman's .ID). Docker
// writes the ID as sha256:<hex>, Podman as <hex>.
func parseInspect(b []byte) (localImage, error) {
	var imgs []struct {
		ID           string `json:"Id"`
		Os           string `json:"Os"`
		Architecture string `json:"Architecture"`
		Variant      string `json:"Variant"`
		Size         int64  `json:"Size"`
	}
	if err := json.Unmarshal(b, &imgs); err != nil {
		return localImage{}, fmt.Errorf("unexpected inspect output: %w", err)
	}
	if len(imgs) != 1 {
		return localImage{}, fmt.Errorf("inspect found %d images, want 1", len(imgs))
	}
	i := imgs[0]
	m := hexID.FindStringSubmatch(i.ID)
	if m == nil {
		return localImage{}, fmt.Errorf("unexpected image ID %q", i.ID)
	}
	return localImage{id: "sha256:" + m[2], plat: v1.Platform{OS: i.Os, Architecture: i.Architecture, Variant: i.Variant}, size: i.Size}, nil
}

// saveLocal writes ref from bin's store as a tarball at out.
func saveLocal(ctx context.Context, bin, ref, out string) error {
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "image", "save", "-o", out, "--", ref)
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s image save %s: %w: %s", filepath.Base(bin), ref, err, strings.TrimSpace(errb.String()))
	}
	return nil
}
