// Package imagebuild finds and builds the guest image sessions boot: the
// one builder that `sandbar image build`, the windows' Rebuild and the
// session manager (an image built on first need) share. main makes one
// and hands it to each.
//
// It is not the image itself (guest/image builds the disks from Debian's
// packages) nor the guest's PID 1 (guest/initbin): it joins them with a
// data directory and says how far a build has got, in words.
package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"sandbar/app/config"
	"sandbar/guest/image"
	"sandbar/guest/image/download"
	"sandbar/guest/initbin"
)

// Builder builds guest images into a data directory's images folder.
type Builder struct {
	Paths config.Paths
	// WorkDir is where a development build looks for the source of the
	// guest init when the binary does not embed it.
	WorkDir string
	// Proxy is the host's proxy for the build's downloads
	// (hostproxy.Config.HTTPProxy, as main read it); nil connects
	// directly.
	Proxy func(*http.Request) (*url.URL, error)
	// Template, when set, saves a template of an image built (or found)
	// that has none yet (app/sandbox.SaveTemplate on the engine's
	// hypervisor), so sessions start from it instead of booting. It
	// failing fails no build: sessions then boot cold, and the log says
	// why.
	Template func(ctx context.Context, img *Image) error
	Logger   *slog.Logger
}

// Progress is how far a build has got.
type Progress = image.Progress

// Image is a built guest image.
type Image = image.Image

// ErrNotBuilt is what Latest returns when no image is built yet.
var ErrNotBuilt = image.ErrNotBuilt

// Options are what a build may choose; zero values are this machine's
// architecture and the official archive.
type Options struct {
	Arch   string
	Mirror string
	// Progress is called as the build goes (may be nil).
	Progress func(Progress)
	// Notes gets a line for a person when the build does something worth
	// saying beyond its progress (building the guest init from source).
	Notes io.Writer
}

// Latest is the newest built image, or an error wrapping ErrNotBuilt.
func (b *Builder) Latest() (*Image, error) { return image.Latest(b.Paths.Images) }

// Build builds (or finds in the cache) the guest image.
func (b *Builder) Build(ctx context.Context, o Options) (*Image, error) {
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if err := b.Paths.Ensure(); err != nil {
		return nil, err
	}
	initBin, err := b.guestInit(ctx, o)
	if err != nil {
		return nil, err
	}
	img, err := image.Build(ctx, image.Options{
		Dir:       b.Paths.Images,
		Downloads: &download.Cache{Dir: b.Paths.Downloads, Proxy: b.Proxy},
		Arch:      o.Arch,
		Mirror:    o.Mirror,
		Init:      initBin,
		Progress:  o.Progress,
		Logger:    b.Logger,
	})
	if err != nil || b.Template == nil || o.Arch != runtime.GOARCH {
		return img, err
	}
	start := time.Now()
	if err := b.Template(ctx, img); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if o.Notes != nil {
			fmt.Fprintf(o.Notes, "no template of the image (sessions boot instead of starting from one): %v\n", err)
		}
		if b.Logger != nil {
			b.Logger.Warn("no template of the image; sessions boot cold", "err", err)
		}
	} else if o.Notes != nil {
		fmt.Fprintf(o.Notes, "template ready (%s): sessions of the default size start from it\n", time.Since(start).Round(100*time.Millisecond))
	}
	return img, nil
}

// Ensure is the newest image, built quietly for this machine first when
// there is none: what a session that needs one calls.
func (b *Builder) Ensure(ctx context.Context) (*Image, error) {
	img, err := b.Latest()
	if errors.Is(err, ErrNotBuilt) {
		if b.Logger != nil {
			b.Logger.Info("building the guest image for a session")
		}
		return b.Build(ctx, Options{})
	}
	return img, err
}

// Status describes the image sessions boot, for a person; an error
// wrapping ErrNotBuilt when there is none.
func (b *Builder) Status() (string, error) {
	img, err := b.Latest()
	if err != nil {
		return "", err
	}
	m := img.Manifest
	hash := m.Hash
	if len(hash) > 12 {
		hash = hash[:12]
	}
	return fmt.Sprintf("%s (%s): kernel %s, %d packages, agent %s, built %s",
		hash, m.Arch, m.Kernel.Version, len(m.Packages), m.Agent.Version, m.BuiltAt.Local().Format("2006-01-02 15:04")), nil
}

// Rebuild builds the image for this machine (a cache hit when its inputs
// did not change), calling progress with a line for a person and the
// fraction done.
func (b *Builder) Rebuild(ctx context.Context, progress func(stage string, frac float64)) error {
	_, err := b.Build(ctx, Options{Progress: func(pr Progress) {
		if progress != nil {
			progress(Stage(pr))
		}
	}})
	return err
}

// guestInit finds the guest's PID 1: embedded by `make build`, or built
// from the source tree sandbar runs in (development).
func (b *Builder) guestInit(ctx context.Context, o Options) ([]byte, error) {
	bin, err := initbin.Binary()
	if err == nil && o.Arch == runtime.GOARCH {
		return bin, nil
	}
	if err != nil && !errors.Is(err, initbin.ErrNotEmbedded) {
		return nil, err
	}
	root, rerr := initbin.ModuleRoot(b.WorkDir)
	if rerr != nil {
		if err == nil {
			return nil, fmt.Errorf("this sandbar carries the guest init for %s only: build for %s from a source checkout", runtime.GOARCH, o.Arch)
		}
		return nil, err
	}
	if o.Notes != nil {
		fmt.Fprintf(o.Notes, "building sandbar-init for linux/%s from %s\n", o.Arch, root)
	}
	return initbin.Build(ctx, root, o.Arch)
}

// Stage turns an image build's progress into a line for a person and the
// fraction of the build done. Downloads are most of a cold build.
func Stage(pr Progress) (string, float64) {
	switch pr.Stage {
	case "index":
		return "Reading the Debian package index…", 0.02
	case "download":
		frac := 0.05
		if pr.Of > 0 {
			frac += 0.6 * float64(min(pr.Count, pr.Of)) / float64(pr.Of)
		}
		what := "Downloading packages"
		if pr.Of > 0 {
			what = fmt.Sprintf("Downloading packages (%d of %d)", min(pr.Count, pr.Of), pr.Of)
		}
		return what + "…", frac
	case "rootfs":
		return "Writing the root disk…", 0.7
	case "kernel":
		return "Preparing the kernel…", 0.8
	case "initramfs":
		return "Writing the initramfs…", 0.85
	case "agent":
		return "Writing the agent disk…", 0.9
	case "done":
		return "Image ready", 1
	}
	return pr.Stage, 0
}
