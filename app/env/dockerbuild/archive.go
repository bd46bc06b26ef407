package dockerbuild

import (
	"archive/tar"

	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Bounds on the archive a builder hands back, beyond the caller's size
// limit: an OCI layout is a handful of small JSON files and one blob per
// layer, config and manifest.
const (
	maxArchiveEntries = 4096
	maxJSON           = 4 << 20
)

// ErrBadArchive is an archive that is not the OCI archive a builder
// writes; the built image is refused.
var ErrBadArchive = errors.New("not an OCI image archive")

var blobName = regexp.MustCompile(`^blobs/sha256/([a-f0-9]{64})$`)

// ReadArchive reads an OCI archive (a tar of an OCI image layout) that an
// untrusted builder wrote, from r into dir (empty, the caller's), and
// returns its one image. Nothing in it is trusted: only oci-layout,
// index.json and blobs/sha256/<hex> are taken, as plain files (a link, a
// device, a path elsewhere or twice is refused), each blob must match its
// name's digest, the whole must be at most max bytes and its JSON at most
// 4 MiB a file. The image's layers are left to the conversion that reads
// every pulled image (ociimage.Store.Import), which bounds what they
// unpack to.
func ReadArchive(r io.Reader, dir string, max int64) (v1.Image, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("the built image's archive %s: %w", fmt.Sprintf(format, a...), ErrBadArchive)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return nil, err
	}
	tr := tar.NewReader(r)
	var total int64
	seen := map[string]bool{}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad("does not read as a tar (%v)", err)
		}
		if n >= maxArchiveEntries {
			return nil, bad("has more than %d entries", maxArchiveEntries)
		}
		name := h.Name
		if strings.HasPrefix(name, "./") {
			name = name[2:]
		}
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			continue
		}
		if name != path.Clean(name) || path.IsAbs(name) || strings.Contains(name, "\\") {
			return nil, bad("holds the path %q", clip(h.Name))
		}
		if h.Typeflag == tar.TypeDir {
			if name != "blobs" && name != "blobs/sha256" {
				return nil, bad("holds the folder %q, which an OCI layout has not", clip(name))
			}
			continue
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			return nil, bad("holds %q as a %s, not a file", clip(name), typeName(h.Typeflag))
		}
		m := blobName.FindStringSubmatch(name)
		if m == nil && name != "oci-layout" && name != "index.json" {
			return nil, bad("holds %q, which an OCI layout has not", clip(name))
		}
		if seen[name] {
			return nil, bad("holds %q twice", name)
		}
		seen[name] = true
		if h.Size < 0 || (m == nil && h.Size > maxJSON) {
			return nil, bad("holds %q of %d bytes", name, h.Size)
		}
		if total += h.Size; total > max {
			return nil, &SizeError{Max: max}
		}
		if err := writeEntry(filepath.Join(dir, filepath.FromSlash(name)), tr, h.Size, m); err != nil {
			if errors.Is(err, ErrBadArchive) {
				return nil, bad("%v", err)
			}
			return nil, err
		}
	}
	if !seen["index.json"] || !seen["oci-layout"] {
		return nil, bad("has no index.json or oci-layout")
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, bad("has an unreadable index (%v)", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, bad("has an unreadable index (%v)", err)
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsImage() {
		return nil, bad("holds %d entries, not one image", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.Size > maxJSON || !seen["blobs/sha256/"+d.Digest.Hex] || d.Digest.Algorithm != "sha256" {
		return nil, bad("names a manifest it does not hold, or one over %d bytes", maxJSON)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, bad("has an unreadable manifest (%v)", err)
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, bad("has an unreadable manifest (%v)", err)
	}
	if mf.Config.Size > maxJSON || !seen["blobs/sha256/"+mf.Config.Digest.Hex] {
		return nil, bad("names a config it does not hold, or one over %d bytes", maxJSON)
	}
	if _, err := img.ConfigFile(); err != nil {
		return nil, bad("has an unreadable config (%v)", err)
	}
	for _, l := range mf.Layers {
		if l.Digest.Algorithm != "sha256" || !seen["blobs/sha256/"+l.Digest.Hex] {
			return nil, bad("names a layer it does not hold (%s)", l.Digest)
		}
		if !l.MediaType.IsLayer() {
			return nil, bad("has a layer of type %q", clip(string(l.MediaType)))
		}
	}
	return img, nil
}

// writeEntry copies size bytes of the archive to p, a new file, checking
// a blob's content against its digest (hexDigest[1]).
func writeEntry(p string, r io.Reader, size int64, hexDigest []string) (err error) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("ends inside %s: %w", filepath.Base(p), ErrBadArchive)
	}
	if hexDigest != nil && hex.EncodeToString(h.Sum(nil)) != hexDigest[1] {
		return fmt.Errorf("holds a blob whose content is not its digest (%s): %w", hexDigest[1][:12], ErrBadArchive)
	}
	return nil
}

// SizeError is an archive over the size limit.
type SizeError struct{ Max int64 }

func (e *SizeError) Error() string {
	return fmt.Sprintf("the built image is over the image size limit of %d MB: make it smaller (fewer layers' worth of files, a smaller base)", e.Max>>20)
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("tar entry of type %q", t)
}
