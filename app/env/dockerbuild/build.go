package dockerbuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/ociimage"
	"sandbar/app/sandbox"
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

func (b *Builder) buildInVM(ctx context.Context, req Request, df *Dockerfile, bases []ociimage.Remote, key string, log *slog.Logger) (Result, error) {
	timeout := req.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	say := func(line string) {
		if req.Progress != nil {
			req.Progress(Progress{Line: line})
		}
	}
	if b.Guest == nil {
		return Result{}, fmt.Errorf("no guest image: run `sandbar image build`: %w", image.ErrNotBuilt)
	}
	if builderID(b.Guest) == b.Guest.Manifest.Hash && len(b.Guest.Manifest.Packages) > 0 {
		return Result{}, errors.New("Sandbar's guest image has no builder (buildah): rebuild it with `sandbar image build`, then start again")
	}
	vmDir, err := os.MkdirTemp(mkdirAll(filepath.Join(b.Dir, "vm")), key[:12]+"-")
	if err != nil {
		return Result{}, diskErr(b.Dir, err)
	}
	defer os.RemoveAll(vmDir)
	opts := sandbox.Options{
		Name: "sandbar-build-" + key[:12], Dir: vmDir, CPUs: req.CPUs, Memory: req.Memory,
		ScratchSize: req.Disk, Workspace: req.Workspace, Logger: log, ReadyTimeout: req.ReadyTimeout,
	}
	if opts.Memory == 0 {
		opts.Memory = DefaultMemory
	}
	if opts.ScratchSize == 0 {
		opts.ScratchSize = DefaultDisk
	}
	if req.Network != nil {
		nic, arg, stop, err := req.Network(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("the build VM's network: %w", err)
		}
		defer stop()
		opts.NIC, opts.NICArg = nic, arg
	}
	say("booting the build VM")
	sb, err := sandbox.Boot(ctx, b.Hypervisor, b.Guest, opts)
	if err != nil {
		return Result{}, fmt.Errorf("boot the build VM: %w", err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		if err := sb.Stop(sctx); err != nil {
			sb.Kill()
		}
		sb.Wait(context.Background())
		sb.Client.Close()
	}()
	v := &vmBuild{sb: sb, req: req, say: say}
	// The builder's signature policy is the containers' configuration's;
	// where it has none, images loaded here (the host pulled them) are
	// accepted as they are.
	if err := v.put(ctx, "set -e; mkdir -p "+guestDir+"; [ -e /etc/containers/policy.json ] || { mkdir -p /etc/containers; echo '"+acceptPolicy+"' > /etc/containers/policy.json; }; cat > "+guestDockerfile, func(w io.Writer) error {
		_, err := w.Write(df.Text)
		return err
	}); err != nil {
		return Result{}, err
	}
	for i, base := range bases {
		mb := int64(0)
		if m, err := base.Manifest(); err == nil {
			for _, l := range m.Layers {
				mb += l.Size
			}
		}
		say(fmt.Sprintf("loading the base image %s (%s, %d MB) into the build VM", base.Ref, base.Digest, mb>>20))
		tag, err := name.NewTag(fmt.Sprintf("sandbar-base-%d:latest", i))
		if err != nil {
			return Result{}, err
		}
		tarPath := fmt.Sprintf("%s/base-%d.tar", guestDir, i)
		if err := v.put(ctx, "cat > "+tarPath, func(w io.Writer) error {
			return tarball.Write(tag, base.Image, w)
		}); err != nil {
			return Result{}, fmt.Errorf("hand the base image %s to the build VM: %w", base.Ref, err)
		}
		if err := v.root(ctx, "load "+base.Ref, []string{"sh", "-c", `set -e; id=$(buildah pull -q "docker-archive:$1"); rm -f "$1"; buildah tag "$id" "$2"`, "sandbar-load", tarPath, BaseName(i)}, nil); err != nil {
			return Result{}, fmt.Errorf("load the base image %s in the build VM: %w", base.Ref, err)
		}
	}
	argv := []string{"buildah", "build", "--isolation", "chroot", "--pull=never", "--layers=false",
		"-f", guestDockerfile, "-t", builtName}
	for _, a := range req.Args {
		argv = append(argv, "--build-arg", a.Name+"="+a.Value)
	}
	if req.Target != "" {
		argv = append(argv, "--target", req.Target)
	}
	argv = append(argv, guestContext(req.Context))
	say("building " + req.Dockerfile + " with buildah in the build VM (" + sb.Ready.Kernel + ")")
	rename := map[string]string{}
	for i, base := range bases {
		rename[BaseName(i)] = base.Ref
	}
	if err := v.build(ctx, argv, rename); err != nil {
		return Result{}, err
	}
	say("writing the built image out of the build VM")
	if err := v.root(ctx, "push", []string{"buildah", "push", "-q", "--disable-compression", builtName, "oci-archive:" + guestArchive}, nil); err != nil {
		return Result{}, fmt.Errorf("write the built image in the build VM: %w", err)
	}
	max := req.Pull.MaxBytes
	if max <= 0 {
		max = ociimage.DefaultMaxBytes
	}
	tmp, err := os.MkdirTemp(mkdirAll(filepath.Join(b.Dir, "tmp")), key[:12]+"-")
	if err != nil {
		return Result{}, diskErr(b.Dir, err)
	}
	defer os.RemoveAll(tmp)
	img, err := v.readArchive(ctx, tmp, max)
	if err != nil {
		return Result{}, err
	}
	// The VM is done with: the conversion needs no VM.
	display := fmt.Sprintf("the image built from %s", req.Dockerfile)
	say("converting the built image")
	popts := req.Pull
	popts.Progress = nil
	stored, err := b.Store.Import(ctx, display, "built", img, popts)
	if err != nil {
		return Result{}, err
	}
	rec, _ := json.Marshal(keyRecord{Digest: stored.Digest, Dockerfile: req.Dockerfile, Built: time.Now().UTC()})
	if err := writeAtomic(b.keyPath(key), rec); err != nil {
		return Result{}, diskErr(b.Dir, err)
	}
	return Result{Image: stored, Key: key, Kernel: sb.Ready.Kernel}, nil
}

// guestContext is the build context's folder in the build VM, where the
// workspace disk is mounted.
func guestContext(ctx string) string {
	ctx = path.Clean("/" + strings.TrimPrefix(ctx, "./"))
	return path.Join(sandbox.DefaultWorkdir, ctx)
}

// vmBuild is the build's VM and what talks to it.
type vmBuild struct {
	sb  *sandbox.Sandbox
	req Request
	say func(string)
}

// put runs script as root with what write writes as its stdin.
func (v *vmBuild) put(ctx context.Context, script string, write func(io.Writer) error) error {
	var errb capped
	p, err := v.sb.Client.StartExec(sandbox.ExecRequest{Argv: []string{"sh", "-c", script}, User: sandbox.UserRoot, Interactive: true}, nil, &errb)
	if err != nil {
		return err
	}
	werr := write(p)
	if werr == nil {
		werr = p.CloseWrite()
	} else {
		p.Kill()
	}
	res, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if res.Code != 0 {
		return fmt.Errorf("%s: exit %d: %s", script, res.Code, errb.text())
	}
	return nil
}

// root runs argv as root; its output goes to out (nil: kept for the
// error).
func (v *vmBuild) root(ctx context.Context, what string, argv []string, out io.Writer) error {
	var errb capped
	if out == nil {
		out = &errb
	}
	res, err := v.sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: argv, User: sandbox.UserRoot, Env: builderEnv}, out, &errb)
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return fmt.Errorf("%s: exit %d: %s", what, res.Code, errb.text())
	}
	return nil
}

// acceptPolicy is containers-policy.json's "accept anything".
const acceptPolicy = `{"default":[{"type":"insecureAcceptAnything"}]}`

// builderEnv has buildah keep its images in vfs storage, which works on
// the guest's overlay root (an overlay of an overlay does not).
var builderEnv = map[string]string{"STORAGE_DRIVER": "vfs", "BUILDAH_ISOLATION": "chroot"}

var (
	stepLine = regexp.MustCompile(`^STEP \d+/\d+: `)
	exitLine = regexp.MustCompile(`exit status (\d+)`)
)

// build runs buildah, its lines to Progress (base names as the person
// wrote them), and says where it failed.
func (v *vmBuild) build(ctx context.Context, argv []string, rename map[string]string) error {
	lines := &lineWriter{tail: 20}
	step := ""
	code := -1
	lines.fn = func(l string) {
		for from, to := range rename {
			l = strings.ReplaceAll(l, from, to)
		}
		if stepLine.MatchString(l) {
			step = l
		}
		if m := exitLine.FindStringSubmatch(l); m != nil {
			fmt.Sscan(m[1], &code)
		}
		if v.req.Progress != nil {
			v.req.Progress(Progress{Line: l, Step: step})
		}
	}
	res, err := v.sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: argv, User: sandbox.UserRoot, Env: builderEnv}, lines, lines)
	lines.flush()
	if err != nil {
		return fmt.Errorf("build %s: %w", v.req.Dockerfile, err)
	}
	if res.Code != 0 {
		return &BuildError{Dockerfile: v.req.Dockerfile, Step: step, Code: code, Tail: lines.last()}
	}
	return nil
}

// readArchive copies the built archive out of the VM into dir and reads
// it (ReadArchive), at most max bytes.
func (v *vmBuild) readArchive(ctx context.Context, dir string, max int64) (img v1Image, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	type out struct {
		img v1Image
		err error
	}
	got := make(chan out, 1)
	go func() {
		img, err := ReadArchive(pr, filepath.Join(dir, "layout"), max)
		if err != nil {
			pr.CloseWithError(err)
			cancel() // stop the copy: the archive is refused
		} else if n, _ := io.CopyN(io.Discard, pr, 1<<20); n == 1<<20 {
			// Past the tar's end and its padding, a builder has nothing
			// more to say: a stream that goes on is refused.
			err = fmt.Errorf("the built image's archive goes on past its end: %w", ErrBadArchive)
			pr.CloseWithError(err)
			cancel()
		}
		got <- out{img, err}
	}()
	var errb capped
	res, xerr := v.sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"cat", guestArchive}, User: sandbox.UserRoot}, pw, &errb)
	pw.Close()
	o := <-got
	if o.err != nil {
		return nil, o.err
	}
	if xerr != nil {
		return nil, fmt.Errorf("read the built image out of the build VM: %w", xerr)
	}
	if res.Code != 0 {
		return nil, fmt.Errorf("read the built image out of the build VM: exit %d: %s", res.Code, errb.text())
	}
	return o.img, nil
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
