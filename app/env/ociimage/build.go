package ociimage

import (
	"context"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Remote is an image on its registry, resolved to one platform's
// manifest but not downloaded: what a build needs of a FROM image, whose
// layers go to the builder rather than into a root file system.
type Remote struct {
	v1.Image
	// Ref is the reference as given; Name the registry's full name of it
	// (registry/repository:tag).
	Ref, Name string
	// Digest is the platform manifest's digest.
	Digest string
}

// Fetch resolves ref as Pull does (credentials, proxy, an index to the
// platform) without downloading its layers or storing it; the layers are
// read from the registry when the caller reads them. Its errors are
// Pull's. Images in a local Docker or Podman are not looked at.
func Fetch(ctx context.Context, ref string, opts PullOptions) (Remote, error) {
	p, err := newPull(ref, opts)
	if err != nil {
		return Remote{}, err
	}
	img, single, err := resolveRemote(ctx, p)
	if err != nil {
		return Remote{}, err
	}
	if single {
		cf, err := img.ConfigFile()
		if err != nil {
			return Remote{}, remoteErr(err, p)
		}
		if got := cf.Platform(); got != nil && got.OS != "" && !platformMatches(*got, p.plat) {
			return Remote{}, wrongPlatform(p, got.String())
		}
	}
	m, err := img.Manifest()
	if err != nil {
		return Remote{}, remoteErr(err, p)
	}
	total := m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	if total > p.max {
		return Remote{}, tooLarge(p, fmt.Sprintf("is %s, over", humanBytes(total)))
	}
	d, err := img.Digest()
	if err != nil {
		return Remote{}, remoteErr(err, p)
	}
	return Remote{Image: img, Ref: ref, Name: p.ref.Name(), Digest: d.String()}, nil
}

// Import stores img, an image Sandbar did not pull (one built in a VM,
// read from the archive the builder wrote), as a pulled one is stored:
// under its manifest digest, its layers flattened and checked by the same
// conversion (paths cleaned, only the file types ext4 holds, the size
// limit on what it unpacks to). display names it in errors and in
// Image.Ref, source says where it came from ("built"). The image is
// hostile data: nothing of it is trusted beyond what the conversion
// checks. opts.Platform, MaxBytes and Progress apply.
func (s *Store) Import(ctx context.Context, display, source string, img v1.Image, opts PullOptions) (Image, error) {
	if err := s.check(); err != nil {
		return Image{}, err
	}
	// A reference that parses, for the platform and size checks' words;
	// errors name display.
	p, err := newPull("sandbar.invalid/built:latest", opts)
	if err != nil {
		return Image{}, err
	}
	p.refStr, p.display = display, display
	d, err := img.Digest()
	if err != nil {
		return Image{}, fmt.Errorf("the image %s: %w", display, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Image{}, fmt.Errorf("the image %s: its config: %w", display, err)
	}
	if got := cf.Platform(); got != nil && got.OS != "" && !platformMatches(*got, p.plat) {
		return Image{}, wrongPlatform(p, got.String())
	}
	return s.write(ctx, p, d.String(), source, func(string) (v1.Image, int64, error) {
		layers, err := img.Layers()
		if err != nil {
			return nil, 0, fmt.Errorf("the image %s: %w", display, err)
		}
		var total int64
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return nil, 0, fmt.Errorf("the image %s: %w", display, err)
			}
			total += n
		}
		if total > p.max {
			return nil, 0, tooLarge(p, fmt.Sprintf("is %s, over", humanBytes(total)))
		}
		return img, total, nil
	})
}

// NormalName is the name container tools give ref once parsed: Docker
// Hub's images as docker.io/library/NAME:TAG, a tag of latest when none
// is given. Builders look images up by it.
func NormalName(ref string) (string, error) {
	r, err := parseRef(ref)
	if err != nil {
		return "", err
	}
	reg := r.Context().RegistryStr()
	if reg == "index.docker.io" {
		reg = "docker.io"
	}
	sep := ":"
	if strings.HasPrefix(r.Identifier(), "sha256:") {
		sep = "@"
	}
	return reg + "/" + r.Context().RepositoryStr() + sep + r.Identifier(), nil
}
