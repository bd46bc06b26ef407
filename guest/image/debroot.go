package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"slices"

	"sandbar/guest/image/debian"
	"sandbar/guest/image/download"
)

// RootOptions say what BuildRoot puts in a root file system.
type RootOptions struct {
	// Downloads is the cache the packages come through (required).
	Downloads *download.Cache
	// Mirror is the Debian archive; DefaultMirror when "".
	Mirror string
	// Arch is the architecture; runtime.GOARCH when "".
	Arch string
	// Packages are the packages asked for; their dependencies come too.
	Packages []string
	// Essential adds Debian's Essential packages, as every Debian-based
	// image has them.
	Essential bool
	// Without drops these packages from what the resolution gave (git
	// from a root that is to have none), whatever depends on them.
	Without []string
	// Links are symbolic links (path without a leading slash → target)
	// written before anything else, in place of the generated file of
	// the same path; a package's file of the same path is an error.
	Links map[string]string
	// Files are regular files written the same way (an /etc/passwd with
	// the image's own users, say).
	Files  []RootFile
	Logger *slog.Logger
}

// RootFile is a regular file BuildRoot writes.
type RootFile struct {
	Name string // without a leading slash
	Mode int64
	Data []byte
}

// BuildRoot writes a read-only ext4 at out holding a Debian root of
// o.Packages, laid out as the guest image's root is (merged /usr, users
// root and nobody, dpkg's database), but without anything of Sandbar's:
// a stand-in for a project's image (an OCI image's root is app/env's) in
// tests and benchmarks of a session on another image's root.
func BuildRoot(ctx context.Context, o RootOptions, out string) error {
	return TarToExt4(out, func(w io.Writer) error { return WriteRoot(ctx, o, w) })
}

// WriteRoot writes what BuildRoot would as a tar stream to w: a layer for
// a test's OCI image.
func WriteRoot(ctx context.Context, o RootOptions, w io.Writer) error {
	if o.Downloads == nil {
		return errors.New("build a root: no download cache given")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Mirror == "" {
		o.Mirror = DefaultMirror
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	archive := &debian.Archive{Mirror: o.Mirror, Suite: Suite, Components: []string{"main"}, Arch: o.Arch, Cache: o.Downloads, Logger: o.Logger}
	ix, err := archive.Index(ctx)
	if err != nil {
		return networkError("read the Debian package index", err, o.Logger)
	}
	want := slices.Clone(o.Packages)
	if o.Essential {
		want = append(want, ix.Essential()...)
	}
	pkgs, err := ix.Resolve(want)
	if err != nil {
		return fmt.Errorf("resolve the root's packages: %w", err)
	}
	pkgs = slices.DeleteFunc(pkgs, func(p debian.Package) bool { return slices.Contains(o.Without, p.Name) })
	debs := make([]string, len(pkgs))
	controls := make([]map[string]string, len(pkgs))
	members := make([]map[string][]byte, len(pkgs))
	names := map[string]bool{}
	var ca []byte
	for i, p := range pkgs {
		if debs[i], err = archive.Fetch(ctx, p); err != nil {
			return networkError("download "+p.Name, err, o.Logger)
		}
		names[p.Name] = true
		if controls[i], err = debian.Control(debs[i]); err != nil {
			return err
		}
		if members[i], err = debian.ControlFiles(debs[i], "md5sums", "conffiles"); err != nil {
			return err
		}
		if p.Name == "ca-certificates" {
			certs, err := collectCerts(debs[i])
			if err != nil {
				return err
			}
			ca = caBundle(certs)
		}
	}
	var extra []entry
	for _, f := range o.Files {
		extra = append(extra, entry{name: f.Name, mode: f.Mode, data: f.Data})
	}
	for _, name := range slices.Sorted(maps.Keys(o.Links)) {
		extra = append(extra, entry{name: name, link: o.Links[name]})
	}
	mine := map[string]bool{}
	for _, e := range extra {
		mine[e.name] = true
	}
	for _, e := range systemFiles(names, ca, o.Mirror) {
		if !mine[e.name] {
			extra = append(extra, e)
		}
	}
	return writeRootTar(ctx, w, debs, controls, members, extra, nil)
}
