// Package debian reads a Debian archive the way apt does, without dpkg or
// root: it fetches a suite's Release and Packages index, resolves a list of
// packages to the full set they depend on, downloads the .deb files
// through a verifying cache, unpacks their data.tar, and assembles them
// into one merged-/usr tar stream for a read-only root file system.
//
// It is not a package manager: maintainer scripts are not run, Conflicts
// and Recommends are ignored, and there is no installed-package database
// (/var/lib/dpkg/status). The guest runs from a read-only root, so nothing
// needs them.
//
// # Trust
//
// Each .deb is checked against the SHA256 the Packages index gives, and
// Packages.xz against the SHA256 the Release file gives, so everything
// rests on Release. Debian signs Release (InRelease, Release.gpg) with
// its archive keys, but checking an OpenPGP signature needs a library the
// project does not carry, so it is not checked: Release is fetched over
// HTTPS from the mirror instead, which trusts the mirror's TLS certificate
// and the mirror itself. A plain-http Mirror gets no such protection;
// use one only on a network you trust.
//
// Only one suite is read (Archive.Suite, e.g. bookworm). bookworm-updates
// and bookworm-security are not merged in; an image built from the point
// release is reproducible from its manifest, and security fixes arrive
// with Debian's next point release.
package debian

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"

	"sandbar/guest/image/download"
)

// DefaultMirror is the Debian archive used when Archive.Mirror is empty.
const DefaultMirror = "https://deb.debian.org/debian"

// Archive is one suite of a Debian mirror, for one architecture.
type Archive struct {
	Mirror     string   // default DefaultMirror
	Suite      string   // default "bookworm"
	Components []string // default {"main"}
	Arch       string   // "amd64" or "arm64"; required
	Cache      *download.Cache
	Logger     *slog.Logger // default slog.Default()
}

func (a *Archive) withDefaults() (Archive, error) {
	c := *a
	if c.Mirror == "" {
		c.Mirror = DefaultMirror
	}
	c.Mirror = strings.TrimRight(c.Mirror, "/")
	if c.Suite == "" {
		c.Suite = "bookworm"
	}
	if len(c.Components) == 0 {
		c.Components = []string{"main"}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Arch == "" {
		return c, errors.New("debian archive: no architecture given: set Archive.Arch to amd64 or arm64")
	}
	if c.Cache == nil {
		return c, errors.New("debian archive: no download cache: set Archive.Cache")
	}
	return c, nil
}

// where names the archive in messages: "bookworm/main for amd64".
func (a *Archive) where() string {
	return fmt.Sprintf("%s/%s for %s", a.Suite, strings.Join(a.Components, ","), a.Arch)
}

// Index fetches the suite's Release file (the cached copy when offline),
// then each component's Packages.xz, checked against the hash Release
// gives for it, and indexes the packages.
func (a *Archive) Index(ctx context.Context) (*Index, error) {
	c, err := a.withDefaults()
	if err != nil {
		return nil, err
	}
	relURL := c.Mirror + "/dists/" + c.Suite + "/Release"
	relPath, fromCache, err := c.Cache.FetchMutable(ctx, relURL)
	if err != nil {
		return nil, fmt.Errorf("read the %s index: %w", c.Suite, err)
	}
	rel, err := readRelease(relPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: delete %s and retry", relURL, err, relPath)
	}
	if fromCache {
		c.Logger.Warn("offline: using the cached Debian index", "suite", c.Suite, "date", rel.date)
	}
	if len(rel.archs) > 0 && !slices.Contains(rel.archs, c.Arch) {
		return nil, fmt.Errorf("debian %s has no %s packages (it has %s): use one of those architectures", c.Suite, c.Arch, strings.Join(rel.archs, ", "))
	}
	var pkgs []Package
	for _, comp := range c.Components {
		p, err := c.packages(ctx, rel, comp)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p...)
	}
	ix := NewIndex(c.where(), pkgs)
	c.Logger.Debug("debian index read", "suite", c.Suite, "arch", c.Arch, "packages", ix.Len(), "release_date", rel.date)
	return ix, nil
}

// packages fetches and parses one component's Packages.xz.
func (a *Archive) packages(ctx context.Context, rel *release, comp string) ([]Package, error) {
	key := comp + "/binary-" + a.Arch + "/Packages.xz"
	sum, ok := rel.sha256[key]
	if !ok {
		return nil, fmt.Errorf("debian %s has no %s in its Release file: check Archive.Components and Arch", a.Suite, key)
	}
	d, err := download.SHA256Hex(sum)
	if err != nil {
		return nil, fmt.Errorf("debian %s Release: %s: %w", a.Suite, key, err)
	}
	plain := a.Mirror + "/dists/" + a.Suite + "/" + key
	url := plain
	if rel.byHash {
		// By-hash names never change, so a mirror updating between our
		// Release and Packages requests cannot hand us a mismatched pair.
		url = a.Mirror + "/dists/" + a.Suite + "/" + path.Dir(key) + "/by-hash/SHA256/" + sum
	}
	p, err := a.Cache.Fetch(ctx, url, d)
	var se *download.StatusError
	if err != nil && url != plain && errors.As(err, &se) && se.Code == http.StatusNotFound {
		p, err = a.Cache.Fetch(ctx, plain, d)
	}
	if err != nil {
		return nil, fmt.Errorf("read the %s package list: %w", a.where(), err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	xr, err := xz.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: delete %s and retry", url, err, p)
	}
	pkgs, err := ParsePackages(xr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: delete %s and retry", url, err, p)
	}
	return pkgs, nil
}

// Fetch downloads a package's .deb (or finds it in the cache), checked
// against the SHA256 the index gives, and returns its path.
func (a *Archive) Fetch(ctx context.Context, p Package) (string, error) {
	c, err := a.withDefaults()
	if err != nil {
		return "", err
	}
	if p.Filename == "" || path.IsAbs(p.Filename) || slices.Contains(strings.Split(p.Filename, "/"), "..") {
		return "", fmt.Errorf("package %s: bad Filename %q in the index: delete the download cache and retry", p.Name, p.Filename)
	}
	d, err := download.SHA256Hex(p.SHA256)
	if err != nil {
		return "", fmt.Errorf("package %s: %w", p.Name, err)
	}
	path, err := c.Cache.Fetch(ctx, c.Mirror+"/"+p.Filename, d)
	if err != nil {
		return "", fmt.Errorf("package %s %s: %w", p.Name, p.Version, err)
	}
	return path, nil
}

// release is what Index needs from a Release file.
type release struct {
	date   string
	archs  []string
	byHash bool
	sha256 map[string]string // path below dists/<suite>/ → hex
}

func readRelease(p string) (*release, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rel *release
	err = readStanzas(f, func(fields map[string]string) error {
		if rel != nil {
			return nil
		}
		rel = &release{
			date:   fields["Date"],
			archs:  strings.Fields(fields["Architectures"]),
			byHash: fields["Acquire-By-Hash"] == "yes",
			sha256: map[string]string{},
		}
		for _, line := range strings.Split(fields["SHA256"], "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
				return fmt.Errorf("bad SHA256 line %q", line)
			}
			rel.sha256[f[2]] = f[0]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rel == nil || len(rel.sha256) == 0 {
		return nil, errors.New("not a Release file (no SHA256 list)")
	}
	return rel, nil
}
