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
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sandbar/app/env/ociimage"
	"sandbar/app/sandbox"
	"sandbar/guest/image"
)

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
	b.cleanStale()
	vmDir, err := os.MkdirTemp(mkdirAll(filepath.Join(b.Dir, "vm")), key[:12]+"-")
	if err != nil {
		return Result{}, diskErr(b.Dir, err)
	}
	// Held while the VM runs, so that cleanStale leaves it alone.
	unlockVM, err := lockFile(ctx, vmDir+".lock")
	if err != nil {
		os.RemoveAll(vmDir)
		return Result{}, err
	}
	defer func() {
		os.RemoveAll(vmDir)
		os.Remove(vmDir + ".lock")
		unlockVM()
	}()
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
		if err := v.root(ctx, "load "+base.Ref, []string{"sh", "-c", `set -e; id=$(buildah --storage-driver=vfs pull -q "docker-archive:$1"); rm -f "$1"; buildah --storage-driver=vfs tag "$id" "$2"`, "sandbar-load", tarPath, BaseName(i)}, nil); err != nil {
			return Result{}, fmt.Errorf("load the base image %s in the build VM: %w", base.Ref, err)
		}
	}
	argv := []string{"buildah", "--storage-driver=vfs", "build", "--isolation", "chroot", "--pull=never", "--layers=false",
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
	if err := v.root(ctx, "push", []string{"buildah", "--storage-driver=vfs", "push", "-q", "--disable-compression", builtName, "oci-archive:" + guestArchive}, nil); err != nil {
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

// builderEnv is the builder's environment. Every buildah command names
// vfs storage (--storage-driver=vfs), which works on the guest's overlay
// root where an overlay of an overlay does not: the configuration's
// default is overlay, and buildah does not take STORAGE_DRIVER from the
// environment.
var builderEnv = map[string]string{"BUILDAH_ISOLATION": "chroot"}

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

// cleanStale removes what builds whose process died left in Dir/vm (a
// scratch disk may hold gigabytes): a folder whose lock nobody holds.
func (b *Builder) cleanStale() {
	d := filepath.Join(b.Dir, "vm")
	ents, _ := os.ReadDir(d)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue // a build just starting takes its lock after making it
		}
		p := filepath.Join(d, e.Name())
		f, err := os.OpenFile(p+".lock", os.O_RDWR, 0)
		if err != nil {
			continue // not ours, or its build is just starting
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(p)
			os.Remove(p + ".lock")
		}
		f.Close()
	}
}
