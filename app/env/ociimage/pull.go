package ociimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"sandbar/app/env/internal/regclient"
)

// DefaultMaxBytes is the size limit when PullOptions.MaxBytes is zero:
// tar2ext4's largest file system by default.
const DefaultMaxBytes = 16 << 30

// PullOptions says how to pull an image. The zero value is ready to use.
type PullOptions struct {
	// Platform is os/arch[/variant]; empty means linux/ and the host's
	// architecture (arm64 on Apple silicon, amd64 on an Intel Mac and on
	// x86-64 Linux), the architecture of the VMs Sandbar runs there.
	Platform string
	// Progress, when set, is called as the pull goes, from one goroutine
	// at a time.
	Progress func(Progress)
	// MaxBytes refuses an image whose layers, or whose unpacked files,
	// add up to more; zero means DefaultMaxBytes.
	MaxBytes int64
	// Keychain gives registry credentials; nil means Docker's config and
	// credential helpers (authn.DefaultKeychain, which honours
	// DOCKER_CONFIG).
	Keychain authn.Keychain
	// Proxy is the host's proxy for the registry's connections
	// (hostproxy.Config.HTTPProxy); nil connects directly.
	Proxy func(*http.Request) (*url.URL, error)
	// LocalTools are the CLIs asked first whether they hold the image
	// (`image inspect`), in order; nil means docker then podman. Set it
	// to an empty non-nil slice to pull from the registry only.
	LocalTools []string
}

// Progress is how far a pull has got. Bytes are the layers' bytes as
// they come from the registry (compressed), or as a local Docker or Podman
// saves them; a layer is done once it is in the root file system.
type Progress struct {
	BytesDone, BytesTotal   int64
	LayersDone, LayersTotal int
	// Cached is set, alone, when the store held the image already.
	Cached bool
}

// pull is one Pull's resolved inputs.
type pull struct {
	refStr      string
	ref         name.Reference
	plat        v1.Platform
	opts        PullOptions
	max         int64
	credsSource string
	hadCreds    bool
	// display names an image that no registry holds (Import) in errors.
	display string
}

func (p *pull) refName() string {
	if p.display != "" {
		return p.display
	}
	return p.ref.Name()
}

// repoRef is the reference without its registry: NAME:TAG or NAME@DIGEST.
func (p *pull) repoRef() string {
	sep := ":"
	if _, ok := p.ref.(name.Digest); ok {
		sep = "@"
	}
	return p.ref.Context().RepositoryStr() + sep + p.ref.Identifier()
}

// Pull makes the image ref names available in the store and returns it.
// An image the store holds already (same digest) is returned without
// downloading a layer; concurrent pulls of one digest wait for each other;
// a failed pull leaves nothing behind. Errors a person can act on are
// *Error (see ErrNotFound and the other kinds).
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (Image, error) {
	if err := s.check(); err != nil {
		return Image{}, err
	}
	p, err := newPull(ref, opts)
	if err != nil {
		return Image{}, err
	}
	if img, ok, err := s.pullLocal(ctx, p); ok || err != nil {
		return img, err
	}
	return s.pullRemote(ctx, p)
}

// newPull checks a pull's reference and platform.
func newPull(ref string, opts PullOptions) (*pull, error) {
	p := &pull{refStr: ref, opts: opts, max: opts.MaxBytes}
	if p.max <= 0 {
		p.max = DefaultMaxBytes
	}
	plat := opts.Platform
	if plat == "" {
		plat = "linux/" + runtime.GOARCH
	}
	pl, err := v1.ParsePlatform(plat)
	if err != nil || pl.OS == "" || pl.Architecture == "" {
		return nil, fmt.Errorf("platform %q: write it as os/arch, like linux/arm64", plat)
	}
	p.plat = *pl
	if p.ref, err = parseRef(ref); err != nil {
		return nil, err
	}
	return p, nil
}

// parseRef parses an image reference (see regclient.ParseRef).
func parseRef(ref string) (name.Reference, error) { return regclient.ParseRef(ref, "image") }

func (s *Store) pullRemote(ctx context.Context, p *pull) (Image, error) {
	img, single, err := resolveRemote(ctx, p)
	if err != nil {
		return Image{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Image{}, remoteErr(err, p)
	}
	return s.write(ctx, p, digest.String(), "registry", func(string) (v1.Image, int64, error) {
		if single {
			cf, err := img.ConfigFile()
			if err != nil {
				return nil, 0, remoteErr(err, p)
			}
			if got := cf.Platform(); got != nil && got.OS != "" && !platformMatches(*got, p.plat) {
				return nil, 0, wrongPlatform(p, got.String())
			}
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, 0, remoteErr(err, p)
		}
		total := m.Config.Size
		for _, l := range m.Layers {
			if l.MediaType.IsDistributable() || l.MediaType.IsLayer() {
				total += l.Size
			}
		}
		if total > p.max {
			return nil, 0, tooLarge(p, fmt.Sprintf("is %s, over", humanBytes(total)))
		}
		return img, total, nil
	})
}

// resolveRemote finds p's image on its registry: the platform's manifest
// of an index, or the image itself (single: its platform is known only
// from its config).
func resolveRemote(ctx context.Context, p *pull) (img v1.Image, single bool, err error) {
	kc := p.opts.Keychain
	p.credsSource = "the keychain given"
	if kc == nil {
		kc = authn.DefaultKeychain
		p.credsSource = regclient.DockerConfigPath()
	}
	auth, err := kc.Resolve(p.ref.Context())
	if err != nil {
		return nil, false, fmt.Errorf("read the credentials for %s from %s: %w", p.ref.Context().RegistryStr(), p.credsSource, err)
	}
	p.hadCreds = auth != authn.Anonymous
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(auth),
		remote.WithTransport(regclient.Transport(regclient.Base(p.opts.Proxy))),
		remote.WithUserAgent("sandbar"),
	}
	desc, err := remote.Get(p.ref, ropts...)
	if err != nil {
		return nil, false, remoteErr(err, p)
	}
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, false, remoteErr(err, p)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, false, remoteErr(err, p)
		}
		d, err := choosePlatform(im, p)
		if err != nil {
			return nil, false, err
		}
		if img, err = remote.Image(p.ref.Context().Digest(d.String()), ropts...); err != nil {
			return nil, false, remoteErr(err, p)
		}
		return img, false, nil
	case desc.MediaType.IsImage():
		if img, err = desc.Image(); err != nil {
			return nil, false, remoteErr(err, p)
		}
		return img, true, nil
	}
	return nil, false, &Error{Kind: ErrNotFound,
		Msg: fmt.Sprintf("%s is a %s, not a container image: name an image", p.refName(), desc.MediaType)}
}

func wrongPlatform(p *pull, has string) error {
	return &Error{Kind: ErrNoPlatform,
		Msg: fmt.Sprintf("%s is an image for %s only, not %s: choose a tag built for %s", p.refName(), has, &p.plat, &p.plat)}
}

func tooLarge(p *pull, what string) error {
	return &Error{Kind: ErrTooLarge,
		Msg: fmt.Sprintf("%s %s the image size limit of %s: choose a smaller image or raise the limit", p.refName(), what, humanBytes(p.max))}
}

// platformMatches says whether got serves want: the same OS and
// architecture, and the variant when want names one (arm64's v8 is its
// only variant).
func platformMatches(got, want v1.Platform) bool {
	if got.OS != want.OS || got.Architecture != want.Architecture {
		return false
	}
	if want.Variant == "" || got.Variant == want.Variant {
		return true
	}
	return got.Architecture == "arm64" && (got.Variant == "" || got.Variant == "v8") && want.Variant == "v8"
}

// choosePlatform picks the index's manifest for p's platform, or says
// which platforms it has.
func choosePlatform(im *v1.IndexManifest, p *pull) (v1.Hash, error) {
	var have []string
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue // attestations and the like
		}
		if platformMatches(*d.Platform, p.plat) && (d.MediaType.IsImage() || d.MediaType == "") {
			return d.Digest, nil
		}
		have = append(have, d.Platform.String())
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	return v1.Hash{}, &Error{Kind: ErrNoPlatform,
		Msg: fmt.Sprintf("%s has no image for %s; it has %s: choose an image built for %s", p.refName(), &p.plat, strings.Join(have, ", "), &p.plat)}
}

// write stores the image with this digest unless the store has it:
// under the digest's lock, open gives the image (and the bytes its layers
// will read), which is converted into a temporary directory, synced, and
// renamed into place.
func (s *Store) write(ctx context.Context, p *pull, digest, source string, open func(tmp string) (v1.Image, int64, error)) (Image, error) {
	k, err := key(digest)
	if err != nil {
		return Image{}, err
	}
	unlock, err := s.lock(ctx, k)
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	if got, err := s.load(k); err == nil {
		if pl, err := v1.ParsePlatform(got.Platform); err == nil && !platformMatches(*pl, p.plat) {
			return Image{}, wrongPlatform(p, got.Platform)
		}
		touch(filepath.Join(s.dir(k), lastUseName))
		got.Ref = p.refStr
		got.LastUse = time.Now()
		if p.opts.Progress != nil {
			p.opts.Progress(Progress{Cached: true})
		}
		return got, nil
	} else if !errors.Is(err, ErrNotStored) {
		return Image{}, err
	}
	s.cleanTemp(k)
	tmp, err := s.tempDir(k)
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)

	img, total, err := open(tmp)
	if err != nil {
		return Image{}, diskErr(s.Dir, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Image{}, remoteErr(err, p)
	}
	entry := filepath.Join(tmp, k)
	if err := os.Mkdir(entry, 0o755); err != nil {
		return Image{}, diskErr(s.Dir, err)
	}
	rootfs := filepath.Join(entry, rootfsName)
	if err := convert(ctx, rootfs, img, p, total, source == "registry"); err != nil {
		return Image{}, diskErr(s.Dir, err)
	}
	fi, err := os.Stat(rootfs)
	if err != nil {
		return Image{}, err
	}
	plat := cf.Platform()
	if plat == nil {
		plat = &p.plat
	}
	meta := Image{
		Ref: p.refStr, Digest: digest, Platform: plat.String(), Source: source,
		Size: fi.Size(), Pulled: time.Now().UTC(),
		Config: Config{
			Env: cf.Config.Env, User: cf.Config.User, WorkingDir: cf.Config.WorkingDir,
			Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, Labels: cf.Config.Labels,
		},
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return Image{}, err
	}
	if err := writeSynced(filepath.Join(entry, metaName), b, 0o444); err != nil {
		return Image{}, diskErr(s.Dir, err)
	}
	if err := writeSynced(filepath.Join(entry, lastUseName), nil, 0o644); err != nil {
		return Image{}, diskErr(s.Dir, err)
	}
	syncDir(entry)
	if err := os.Rename(entry, s.dir(k)); err != nil {
		return Image{}, fmt.Errorf("store image %s in %s: %w", digest, s.Dir, err)
	}
	syncDir(s.Dir)
	got, err := s.load(k)
	if err != nil {
		return Image{}, err
	}
	got.Ref = p.refStr
	return got, nil
}

func writeSynced(p string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	return f.Close()
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
