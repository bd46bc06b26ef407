package features

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/internal/regclient"
)

// The spec's media types of a feature artifact.
const (
	// ConfigMediaType is the artifact manifest's config.
	ConfigMediaType types.MediaType = "application/vnd.devcontainers"
	// LayerMediaType is the layer holding the feature's folder as a tar.
	LayerMediaType types.MediaType = "application/vnd.devcontainers.layer.v1+tar"
)

// Options says how to fetch. The zero value fetches from registries with
// Docker's credentials and has no local features.
type Options struct {
	// Keychain gives registry credentials; nil means Docker's config and
	// credential helpers (authn.DefaultKeychain, which honours
	// DOCKER_CONFIG).
	Keychain authn.Keychain
	// Proxy is the host's proxy for the registry's connections
	// (hostproxy.Config.HTTPProxy); nil connects directly.
	Proxy func(*http.Request) (*url.URL, error)
	// Local holds the files a "./folder" feature may come from, by
	// slash-separated path from the repository's top: the trusted
	// content, never the working tree read again.
	Local map[string][]byte
	// LocalFrom names the folder Local holds, for errors (".devcontainer").
	LocalFrom string
	// MaxBytes bounds each feature; zero means DefaultMaxBytes.
	MaxBytes int64
}

// Feature is a fetched feature, ready to install.
type Feature struct {
	// Feature is its entry as ordered, its Options resolved: every
	// option the feature declares, with the file's value or the default.
	devcontainer.Feature
	Meta Meta
	// Source says where it came from: "registry HOST" or the folder.
	Source string
	// Digest is the artifact manifest's digest; "" for a local feature.
	Digest string
	// Files is its folder.
	Files []File
}

// Version is the feature's version as its metadata says, or "no version".
func (f Feature) Version() string {
	if f.Meta.Version == "" {
		return "no version"
	}
	return f.Meta.Version
}

// OptionEnv is the options as install.sh gets them (Option.EnvName).
func (f Feature) OptionEnv() map[string]string {
	env := map[string]string{}
	for _, o := range f.Options {
		env[o.EnvName()] = o.Value
	}
	return env
}

// Fetch fetches every feature cfg names, and the features they depend
// on, and returns them in install order with their options resolved.
// Errors name the feature, the registry or the folder, and what to do.
func Fetch(ctx context.Context, cfg *devcontainer.Config, opts Options) ([]Feature, error) {
	if len(cfg.Features) == 0 {
		return nil, nil
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	fetched := map[string]Feature{}
	meta := map[string]devcontainer.FeatureMeta{}
	queue := append([]devcontainer.Feature(nil), cfg.Features...)
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if _, ok := fetched[f.ID]; ok {
			continue
		}
		if len(fetched) >= 100 {
			return nil, fmt.Errorf("features need more than 100 features with their dependencies: remove some features from %s", cfg.File)
		}
		var got Feature
		var err error
		if f.LocalPath != "" {
			got, err = fetchLocal(f, opts)
		} else {
			got, err = fetchRemote(ctx, f.ID, opts)
		}
		if err != nil {
			return nil, err
		}
		fetched[f.ID] = got
		meta[f.ID] = devcontainer.FeatureMeta{DependsOn: got.Meta.DependsOn, InstallsAfter: got.Meta.InstallsAfter}
		queue = append(queue, got.Meta.DependsOn...)
	}
	order, err := devcontainer.OrderFeatures(cfg.Features, meta, cfg.OverrideFeatureInstallOrder...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	out := make([]Feature, 0, len(order))
	for _, f := range order {
		got := fetched[f.ID]
		resolved, err := got.Meta.ResolveOptions(f.ID, f.Options)
		if err != nil {
			return nil, err
		}
		got.Feature = f
		got.Options = resolved
		out = append(out, got)
	}
	return out, nil
}

// fetchLocal reads a "./folder" feature from the trusted files.
func fetchLocal(f devcontainer.Feature, opts Options) (Feature, error) {
	from := opts.LocalFrom
	if from == "" {
		from = "the trusted repository files"
	}
	prefix := strings.TrimSuffix(f.LocalPath, "/") + "/"
	var names []string
	for p := range opts.Local {
		if strings.HasPrefix(p, prefix) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return Feature{}, fmt.Errorf("feature %s: %s has no files of %s: local features must be inside %s, and trusted; move the feature's folder there", f.ID, from, f.LocalPath, from)
	}
	var files []File
	var total int64
	dirs := map[string]bool{}
	for _, p := range names {
		rel := strings.TrimPrefix(p, prefix)
		for d := path.Dir(rel); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
		data := opts.Local[p]
		total += int64(len(data))
		if total > opts.MaxBytes {
			return Feature{}, fmt.Errorf("feature %s is larger than %d MiB: a feature is a few scripts; make it smaller", f.ID, opts.MaxBytes>>20)
		}
		files = append(files, File{Name: rel, Data: data, Mode: 0o644})
	}
	var dirFiles []File
	for _, d := range sortedKeys(dirs) {
		dirFiles = append(dirFiles, File{Name: d, Dir: true, Mode: 0o755})
	}
	files = append(dirFiles, files...)
	return finish(f.ID, f.LocalPath, "", files)
}

// finish checks a fetched folder: it has its metadata and install.sh.
func finish(id, source, digest string, files []File) (Feature, error) {
	var metaData []byte
	hasInstall := false
	for i := range files {
		switch files[i].Name {
		case MetaFile:
			metaData = files[i].Data
		case InstallScript:
			hasInstall = !files[i].Dir
			files[i].Mode |= 0o755
		}
	}
	if metaData == nil {
		return Feature{}, fmt.Errorf("feature %s (%s) has no %s: it is not a devcontainer feature; check its id", id, source, MetaFile)
	}
	if !hasInstall {
		return Feature{}, fmt.Errorf("feature %s (%s) has no %s: a feature Sandbar can install has one; check its id", id, source, InstallScript)
	}
	m, err := ParseMeta(id, metaData)
	if err != nil {
		return Feature{}, err
	}
	return Feature{Feature: devcontainer.Feature{ID: id}, Meta: m, Source: source, Digest: digest, Files: files}, nil
}

// fetchRemote fetches a feature artifact from its registry.
func fetchRemote(ctx context.Context, id string, opts Options) (Feature, error) {
	ref, err := regclient.ParseRef(id, "feature")
	if err != nil {
		return Feature{}, fmt.Errorf("feature %s: %w", id, err)
	}
	reg := ref.Context().RegistryStr()
	kc := opts.Keychain
	credsSource := "the keychain given"
	if kc == nil {
		kc = authn.DefaultKeychain
		credsSource = regclient.DockerConfigPath()
	}
	auth, err := kc.Resolve(ref.Context())
	if err != nil {
		return Feature{}, fmt.Errorf("feature %s: read the credentials for %s from %s: %w", id, reg, credsSource, err)
	}
	rerr := func(err error) error { return remoteErr(err, id, ref, credsSource, auth != authn.Anonymous) }
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(auth),
		remote.WithTransport(regclient.Transport(regclient.Base(opts.Proxy))),
		remote.WithUserAgent("sandbar"),
	}
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return Feature{}, rerr(err)
	}
	if !desc.MediaType.IsImage() {
		return Feature{}, fmt.Errorf("feature %s: %s serves a %s, not a feature artifact: check the feature's id", id, reg, desc.MediaType)
	}
	img, err := desc.Image()
	if err != nil {
		return Feature{}, rerr(err)
	}
	m, err := img.Manifest()
	if err != nil {
		return Feature{}, rerr(err)
	}
	var layer *int
	for i, l := range m.Layers {
		if l.MediaType == LayerMediaType {
			layer = &i
			break
		}
	}
	if layer == nil {
		return Feature{}, fmt.Errorf("feature %s: %s serves no layer of type %s in it: it is not a devcontainer feature; check the feature's id", id, reg, LayerMediaType)
	}
	ld := m.Layers[*layer]
	if ld.Size > opts.MaxBytes {
		return Feature{}, fmt.Errorf("feature %s is %d bytes, larger than %d MiB: a feature is a few scripts; remove it from devcontainer.json", id, ld.Size, opts.MaxBytes>>20)
	}
	l, err := img.LayerByDigest(ld.Digest)
	if err != nil {
		return Feature{}, rerr(err)
	}
	rc, err := l.Compressed() // the blob as stored, checked against its digest
	if err != nil {
		return Feature{}, rerr(err)
	}
	defer rc.Close()
	files, err := readArchive(id, rc, opts.MaxBytes)
	if err != nil {
		if ctx.Err() != nil {
			return Feature{}, ctx.Err()
		}
		var nerr net.Error
		if errors.As(err, &nerr) {
			return Feature{}, rerr(err)
		}
		return Feature{}, err
	}
	return finish(id, "registry "+reg, desc.Digest.String(), files)
}

// remoteErr says in words what a failed registry call means for a
// feature, and what to do.
func remoteErr(err error, id string, ref name.Reference, credsSource string, hadCreds bool) error {
	reg := ref.Context().RegistryStr()
	var terr *transport.Error
	if errors.As(err, &terr) {
		codes := map[transport.ErrorCode]bool{}
		for _, d := range terr.Errors {
			codes[d.Code] = true
		}
		switch {
		case terr.StatusCode == http.StatusUnauthorized || codes[transport.UnauthorizedErrorCode]:
			if !hadCreds {
				return fmt.Errorf("feature %s: %s wants credentials (or has no such feature); there are none for %s in %s: run `docker login %s` if the feature is private, else check its id: %w", id, reg, reg, credsSource, reg, err)
			}
			return fmt.Errorf("feature %s: %s refused the credentials in %s (HTTP 401): run `docker login %s` again: %w", id, reg, credsSource, reg, err)
		case terr.StatusCode == http.StatusForbidden || codes[transport.DeniedErrorCode]:
			return fmt.Errorf("feature %s: %s denied access (HTTP 403): run `docker login %s` with an account that may pull it: %w", id, reg, reg, err)
		case terr.StatusCode == http.StatusNotFound || codes[transport.ManifestUnknownErrorCode] || codes[transport.NameUnknownErrorCode]:
			return fmt.Errorf("feature %s: %s has no such feature: check its id and version tag in devcontainer.json: %w", id, reg, err)
		}
		return fmt.Errorf("feature %s: registry %s failed to serve it (HTTP %d): try again later: %w", id, reg, terr.StatusCode, err)
	}
	var nerr net.Error
	var uaErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &uaErr), errors.As(err, &hostErr):
		return fmt.Errorf("feature %s: cannot trust registry %s: its TLS certificate does not verify: %w", id, reg, err)
	case errors.As(err, &nerr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("feature %s: cannot reach registry %s: check the feature's id and your network, then start again: %w", id, reg, err)
	}
	return fmt.Errorf("feature %s from %s: %w", id, reg, err)
}
