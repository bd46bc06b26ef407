package cli

import (
	"context"
	"fmt"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/env/ociimage"
	"sandbar/app/imagebuild"
)

// ociImages is where pulled OCI images are kept: <data dir>/environments/images.
func ociImages(env *Env) *ociimage.Store {
	return &ociimage.Store{Dir: env.Paths.EnvImages()}
}

// imagePull pulls an OCI image (from a local Docker or Podman when it has
// it, else its registry) into the store of read-only roots, showing bytes
// and layers as they go.
func imagePull(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar image pull")
	platform := fs.String("platform", "", "os/arch to pull from a multi-arch image (default: linux/ and this machine's architecture)")
	maxMB := fs.Int64("max-size", 0, "refuse an image over this many megabytes (default: 16 GiB)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar image pull: give one image: sandbar image pull [--platform OS/ARCH] REF"}
	}
	return pullShowing(ctx, env, fs.Arg(0), ociimage.PullOptions{Platform: *platform, MaxBytes: *maxMB << 20})
}

// pullShowing pulls ref into the store with a progress bar of bytes and
// layers, and ends with a line naming the image, its digest, platform,
// file and size.
func pullShowing(ctx context.Context, env *Env, ref string, opts ociimage.PullOptions) error {
	bar := newProgressBar(env.Stdout, env.IsTerminal)
	defer bar.Done()
	start := time.Now()
	cached := false
	opts.Progress = func(p ociimage.Progress) {
		if p.Cached {
			cached = true
			return
		}
		bar.Update(imagebuild.Progress{Stage: "pull", Done: p.BytesDone, Total: p.BytesTotal,
			Item: fmt.Sprintf("layer %d/%d", p.LayersDone, p.LayersTotal)})
	}
	if opts.Proxy == nil && env.Images != nil {
		// The host's proxy, as main read it (a setting that does not
		// parse fails the pull, saying which).
		opts.Proxy = env.Images.Proxy
	}
	img, err := ociImages(env).Pull(ctx, ref, opts)
	if err != nil {
		return err
	}
	how := fmt.Sprintf("pulled in %.1fs", time.Since(start).Seconds())
	if cached {
		how = "already pulled"
	}
	if img.Source != "registry" {
		how += " from " + img.Source
	}
	bar.Finish(fmt.Sprintf("image %s (%s, %s) %s: %s, %s", termsafe.Line(ref), short(img.Digest[len("sha256:"):]), img.Platform, how, img.Path, humanBytes(img.Size)))
	return nil
}
