package dockerbuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/ociimage"
	"sandbar/guest/image"
	"sandbar/vm"
)

// Defaults for Request fields left zero.
const (
	DefaultMemory = 2048 * vm.MiB
	// DefaultDisk is the build VM's scratch disk (sparse): buildah's
	// vfs storage holds a full copy of the root per layer.
	DefaultDisk    = 16 << 30
	DefaultTimeout = 60 * time.Minute
)

// In the build VM.
const (
	guestDir        = "/var/tmp/sandbar-build"
	guestDockerfile = guestDir + "/Dockerfile"
	guestArchive    = guestDir + "/image.tar"
	builtName       = "localhost/sandbar-built:latest"
)

// Builder builds images in VMs of the guest image.
type Builder struct {
	Hypervisor vm.Hypervisor
	Guest      *image.Image
	// Store keeps the built images, beside the pulled ones.
	Store *ociimage.Store
	// Dir holds what a build leaves: the cache's keys (Dir/keys), the
	// build VMs' directories while they run (Dir/vm), the archives read
	// back (Dir/tmp).
	Dir    string
	Logger *slog.Logger
}

// Request is one build.
type Request struct {
	// Label names the build in the VM's name and the logs.
	Label string
	// Dockerfile and Context are paths in the repository
	// (devcontainer.Config's Build, resolved), DockerfileData the
	// Dockerfile's text at the commit and DockerfileID, ContextID the git
	// ids of it and of the context's tree.
	Dockerfile, Context     string
	DockerfileData          []byte
	DockerfileID, ContextID string
	Args                    []devcontainer.EnvVar
	Target                  string
	// Workspace is the read-only disk of the repository at the commit
	// (a session's base disk): the build context is read from it.
	Workspace string
	// Network, when set, gives the build VM its network (a session's,
	// under the project's rules); stop releases it. Nil: no network.
	Network func(ctx context.Context) (nic *vm.NIC, arg string, stop func(), err error)
	// Pull is how the base images are pulled on the host (credentials,
	// proxy); its MaxBytes also bounds the built image.
	Pull    ociimage.PullOptions
	CPUs    int
	Memory  uint64
	Disk    int64
	Timeout time.Duration
	// ReadyTimeout bounds the build VM's boot (sandbox's default when 0).
	ReadyTimeout time.Duration
	// Progress hears each line of the build and what it is doing.
	Progress func(Progress)
}

// Progress is one line of a build: Line is the builder's own line (or
// Sandbar's, for what it does around it), Step the build's current step
// ("STEP 2/5: RUN make").
type Progress struct {
	Line, Step string
}

// Result is a built image.
type Result struct {
	Image ociimage.Image
	Key   string
	// Cached is set when an earlier build with the same key served.
	Cached bool
	Took   time.Duration
	// Kernel is the build VM's kernel, as its guest reported it.
	Kernel string
	// Note says, for the log, why an image built before serves although
	// the build's inputs could not all be checked.
	Note string
}

// BuildError is a build that failed in the builder: the step it failed
// at, the exit code of its command and the build's last lines.
type BuildError struct {
	Dockerfile string
	Step       string
	Code       int // -1 when the builder's output did not say
	Tail       []string
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed to build", e.Dockerfile)
	if e.Step != "" {
		fmt.Fprintf(&b, " at %s", e.Step)
	}
	if e.Code >= 0 {
		fmt.Fprintf(&b, " (exit code %d)", e.Code)
	}
	b.WriteString(": fix the Dockerfile and start again")
	if len(e.Tail) > 0 {
		b.WriteString("; the build's last lines:\n  ")
		b.WriteString(strings.Join(e.Tail, "\n  "))
	}
	return b.String()
}

// Parse reads the request's Dockerfile with its arguments and target.
func (req *Request) Parse() (*Dockerfile, error) {
	return Parse(req.Dockerfile, req.DockerfileData, argMap(req.Args), req.Target)
}

func argMap(args []devcontainer.EnvVar) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		m[a.Name] = a.Value
	}
	return m
}

// keyRecord is Dir/keys/<key>.json: the image a key built.
type keyRecord struct {
	Digest     string    `json:"digest"`
	Dockerfile string    `json:"dockerfile"`
	Built      time.Time `json:"built"`
}

// Build returns the image req builds: from the cache when an unchanged
// build made it before, else built in a VM. The base images are pulled on
// the host first (their errors are ociimage's). Nothing of a failed build
// is kept: an image built before, and sessions running on it, are left
// as they were.
func (b *Builder) Build(ctx context.Context, req Request) (Result, error) {
	began := time.Now()
	if b.Store == nil || b.Dir == "" || b.Hypervisor == nil {
		return Result{}, errors.New("dockerbuild: the builder needs a hypervisor, a store and a directory")
	}
	log := b.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	say := func(line string) {
		if req.Progress != nil {
			req.Progress(Progress{Line: line})
		}
	}
	df, err := req.Parse()
	if err != nil {
		return Result{}, err
	}
	plat := req.Pull.Platform
	if plat == "" {
		plat = "linux/" + runtime.GOARCH
	}
	inputs := KeyInputs{
		Dockerfile: req.Dockerfile, DockerfileID: req.DockerfileID,
		Context: req.Context, ContextID: req.ContextID,
		Args: argMap(req.Args), Target: req.Target, Platform: plat,
		Builder: builderID(b.Guest),
	}
	// offline keys the build without its bases' digests: when a base's
	// registry cannot be reached, the image last built from the same
	// Dockerfile, context and arguments serves, and the log says so.
	offline := "inputs-" + Key(inputs)
	bases := make([]ociimage.Remote, len(df.Bases))
	digests := make([]string, len(df.Bases))
	for i, base := range df.Bases {
		say(fmt.Sprintf("resolving the base image %s (line %d)", base.Ref, base.Line))
		r, err := ociimage.Fetch(ctx, base.Ref, req.Pull)
		if errors.Is(err, ociimage.ErrUnreachable) {
			if res, ok := b.cachedVia(offline); ok {
				res.Took = time.Since(began)
				res.Note = fmt.Sprintf("the base image %s cannot be reached (%v): using the image built before from the same Dockerfile, context and arguments", base.Ref, err)
				return res, nil
			}
		}
		if err != nil {
			return Result{}, fmt.Errorf("%s, line %d: the base image %s: %w", req.Dockerfile, base.Line, base.Ref, err)
		}
		bases[i], digests[i] = r, r.Digest
	}
	inputs.Bases = digests
	key := Key(inputs)
	if res, ok := b.cached(key); ok {
		res.Took = time.Since(began)
		b.remember(offline, key)
		return res, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(b.Dir, "locks", key+".lock"))
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if res, ok := b.cached(key); ok { // built by another while we waited
		res.Took = time.Since(began)
		return res, nil
	}
	res, err := b.buildInVM(ctx, req, df, bases, key, log)
	if err != nil {
		return Result{}, err
	}
	b.remember(offline, key)
	res.Took = time.Since(began)
	return res, nil
}

// builderID names the builder for the cache key: the guest image's
// buildah package, or the image's hash when it lists no packages.
func builderID(g *image.Image) string {
	if g == nil {
		return ""
	}
	for _, p := range g.Manifest.Packages {
		if p.Name == "buildah" {
			return "buildah " + p.Version
		}
	}
	return g.Manifest.Hash
}

// remember points the offline key at the full one.
func (b *Builder) remember(offline, key string) {
	if err := writeAtomic(b.keyPath(offline), []byte(key)); err != nil && b.Logger != nil {
		b.Logger.Warn("dockerbuild: record the build for offline use", "err", err)
	}
}

// cachedVia is what the full key an offline key points at built.
func (b *Builder) cachedVia(offline string) (Result, bool) {
	key, err := os.ReadFile(b.keyPath(offline))
	if err != nil || !hexKey.Match(key) {
		return Result{}, false
	}
	return b.cached(string(key))
}

var hexKey = regexp.MustCompile(`^[a-f0-9]{64}$`)

func (b *Builder) keyPath(key string) string { return filepath.Join(b.Dir, "keys", key+".json") }

// cached is the stored image key built, when the store still has it.
func (b *Builder) cached(key string) (Result, bool) {
	data, err := os.ReadFile(b.keyPath(key))
	if err != nil {
		return Result{}, false
	}
	var rec keyRecord
	if json.Unmarshal(data, &rec) != nil {
		return Result{}, false
	}
	img, err := b.Store.Get(rec.Digest)
	if err != nil {
		return Result{}, false // pruned since: built again
	}
	_ = b.Store.Touch(rec.Digest)
	return Result{Image: img, Key: key, Cached: true}, true
}

func mkdirAll(d string) string {
	os.MkdirAll(d, 0o700)
	return d
}

func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// diskErr says which folder is full.
func diskErr(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("the disk holding %s is full: free some space there (or remove unused images in Settings → Storage) and start again: %w", dir, err)
	}
	return err
}

// lockFile takes an exclusive lock on p, waiting until ctx is done.
func lockFile(ctx context.Context, p string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another build of the same image: %w", ctx.Err())
		case <-t.C:
		}
	}
}
