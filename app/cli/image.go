package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/imagebuild"
	"sandbar/guest/image"
)

func imageBuild(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar image build")
	arch := fs.String("arch", runtime.GOARCH, "guest architecture: amd64 or arm64")
	mirror := fs.String("mirror", "", "Debian mirror (default: the official archive)")
	if err := parse(fs, args); err != nil {
		return err
	}
	img, err := buildImage(ctx, env, env.Stdout, *arch, *mirror)
	if err != nil {
		return err
	}
	m := img.Manifest
	fmt.Fprintf(env.Stdout, "image %s ready in %s\n", short(m.Hash), img.Dir)
	fmt.Fprintf(env.Stdout, "  kernel %s, %d packages, agent %s %s\n", m.Kernel.Version, len(m.Packages), m.Agent.Package, m.Agent.Version)
	for _, name := range []string{"kernel", "initramfs", "rootfs.ext4", "agent.ext4"} {
		if n, ok := m.Sizes[name]; ok {
			fmt.Fprintf(env.Stdout, "  %-12s %s\n", name, humanBytes(n))
		}
	}
	return nil
}

// buildImage builds (or finds in the cache) the guest image for arch with
// the one image builder, showing its progress bar and notes on w. Other
// commands call it when they need an image and none is built yet.
func buildImage(ctx context.Context, env *Env, w io.Writer, arch, mirror string) (*imagebuild.Image, error) {
	b := env.Images
	bar := newProgressBar(w, env.IsTerminal)
	defer bar.Done()
	start := time.Now()
	img, err := b.Build(ctx, imagebuild.Options{Arch: arch, Mirror: mirror, Progress: bar.Update, Notes: w})
	if err != nil {
		return nil, err
	}
	bar.Finish(fmt.Sprintf("image built in %.1fs", time.Since(start).Seconds()))
	return img, nil
}

func imagePath(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar image path")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, env.Paths.Images)
	return nil
}

func imageList(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar image ls")
	if err := parse(fs, args); err != nil {
		return err
	}
	imgs, err := image.List(env.Paths.Images)
	if err != nil {
		return err
	}
	if len(imgs) == 0 {
		fmt.Fprintln(env.Stdout, "no guest image yet: run `sandbar image build`")
	} else {
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "HASH\tARCH\tKERNEL\tPACKAGES\tAGENT\tROOTFS\tBUILT")
		for _, img := range imgs {
			m := img.Manifest
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", short(m.Hash), m.Arch, m.Kernel.Version, len(m.Packages),
				m.Agent.Version, humanBytes(m.Sizes["rootfs.ext4"]), m.BuiltAt.Local().Format("2006-01-02 15:04"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// The images pulled for project environments, shared by projects.
	pulled, err := ociImages(env).List()
	if err != nil || len(pulled) == 0 {
		return err
	}
	fmt.Fprintln(env.Stdout, "\nimages pulled for project environments (most recently used first):")
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tPLATFORM\tSIZE\tLAST USED")
	for _, img := range pulled {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termsafe.Line(img.Ref), short(strings.TrimPrefix(img.Digest, "sha256:")), img.Platform,
			humanBytes(img.Size), img.LastUse.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
