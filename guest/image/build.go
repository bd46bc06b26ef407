package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandbar/guest/image/debian"
	"sandbar/guest/image/download"
	"sandbar/guest/image/kernel"
)

// staleAfter is how old an abandoned build directory must be before a new
// build removes it; younger ones may belong to a build still running in
// another process.
const staleAfter = 24 * time.Hour

// Build returns the image opts describes, building it unless a complete
// one with the same inputs is already in opts.Dir. It always reads the
// Debian index first (from the download cache when offline) to pin exact
// package versions. A build happens in a temporary directory renamed into
// place at the end, so an interrupted build leaves no half image behind.
func Build(ctx context.Context, opts Options) (*Image, error) {
	start := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	log := opts.Logger
	report := func(p Progress) {
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create images directory: %w", err)
	}
	removeStale(opts.Dir, time.Now().Add(-staleAfter), log)
	// Byte counts of each download, tagged with how many files are done.
	var fetched, toFetch atomic.Int64
	dl := withProgress(opts.Downloads, func(p download.Progress) {
		report(Progress{Stage: "download", Item: p.URL, Done: p.Done, Total: p.Total, Count: int(fetched.Load()), Of: int(toFetch.Load())})
	})

	report(Progress{Stage: "index", Item: opts.Mirror})
	archive := &debian.Archive{Mirror: opts.Mirror, Suite: Suite, Components: []string{"main"}, Arch: opts.Arch, Cache: dl, Logger: log}
	ix, err := archive.Index(ctx)
	if err != nil {
		return nil, networkError("read the Debian package index", err, log)
	}
	// Packages declare no dependencies on Essential ones: ask for them too.
	pkgs, err := ix.Resolve(append(slices.Clone(opts.Packages), ix.Essential()...))
	if err != nil {
		return nil, fmt.Errorf("resolve root packages: %w", err)
	}
	log.Debug("package index read", "packages", len(pkgs), "seconds", time.Since(start).Seconds())
	kpkg, kver, err := kernelPackage(ix, opts.Arch)
	if err != nil {
		return nil, err
	}
	initSum := sha256.Sum256(opts.Init)
	m := Manifest{
		Arch:       opts.Arch,
		Suite:      Suite,
		Kernel:     KernelRef{Package: kpkg.Name, Version: kpkg.Version, Release: kver, SHA256: kpkg.SHA256},
		Modules:    opts.Modules,
		Agent:      opts.Agent,
		InitSHA256: hex.EncodeToString(initSum[:]),
		Builder:    Builder,
	}
	for _, p := range pkgs {
		m.Packages = append(m.Packages, PackageRef{Name: p.Name, Version: p.Version, SHA256: p.SHA256})
	}
	m.Hash = m.ComputeHash()
	log = log.With("image", m.Hash[:12])

	if img, err := Open(opts.Dir, m.Hash); err == nil {
		log.Info("guest image up to date", "dir", img.Dir)
		if err := setCurrent(opts.Dir, m.Hash); err != nil {
			return nil, err
		}
		report(Progress{Stage: "done", Item: img.Dir})
		return img, nil
	}

	// Fetch everything first, so a network failure changes nothing.
	debs := make([]string, len(pkgs))
	var downloaded int64
	of := len(pkgs) + 2
	toFetch.Store(int64(of))
	for i, p := range pkgs {
		fetched.Store(int64(i))
		report(Progress{Stage: "download", Item: p.Name, Count: i, Of: of})
		if debs[i], err = archive.Fetch(ctx, p); err != nil {
			return nil, networkError("download "+p.Name, err, log)
		}
		downloaded += p.Size
	}
	fetched.Store(int64(len(pkgs)))
	report(Progress{Stage: "download", Item: kpkg.Name, Count: len(pkgs), Of: of})
	kdeb, err := archive.Fetch(ctx, kpkg)
	if err != nil {
		return nil, networkError("download "+kpkg.Name, err, log)
	}
	downloaded += kpkg.Size
	fetched.Store(int64(len(pkgs) + 1))
	report(Progress{Stage: "download", Item: opts.Agent.Package, Count: len(pkgs) + 1, Of: of})
	agentTgz, err := fetchAgent(ctx, dl, opts.Registry, opts.Agent)
	if err != nil {
		return nil, networkError("download the agent", err, log)
	}
	if fi, err := os.Stat(agentTgz); err == nil {
		downloaded += fi.Size()
	}
	report(Progress{Stage: "download", Count: of, Of: of})

	names := map[string]bool{}
	var ca []byte
	controls := make([]map[string]string, len(pkgs))
	members := make([]map[string][]byte, len(pkgs))
	for i, p := range pkgs {
		names[p.Name] = true
		if controls[i], err = debian.Control(debs[i]); err != nil {
			return nil, err
		}
		if members[i], err = debian.ControlFiles(debs[i], "md5sums", "conffiles"); err != nil {
			return nil, err
		}
		if p.Name == "ca-certificates" {
			certs, err := collectCerts(debs[i])
			if err != nil {
				return nil, err
			}
			ca = caBundle(certs)
		}
	}

	tmp, err := os.MkdirTemp(opts.Dir, ".tmp-"+m.Hash[:16]+"-")
	if err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place

	var agentBinSize int64
	jobs := []job{
		{RootFSFile, func(ctx context.Context) error {
			report(Progress{Stage: "rootfs", Count: 0, Of: len(debs)})
			return TarToExt4(filepath.Join(tmp, RootFSFile), func(w io.Writer) error {
				return writeRootTar(ctx, w, debs, controls, members, systemFiles(names, ca, opts.Mirror), func(item string, i int) {
					report(Progress{Stage: "rootfs", Item: item, Count: i, Of: len(debs)})
				})
			})
		}},
		{KernelFile, func(ctx context.Context) error {
			report(Progress{Stage: "kernel", Item: kpkg.Name})
			resolved, err := buildBoot(kdeb, opts.Arch, kver, tmp, opts.Init, opts.Modules,
				filepath.Join(tmp, KernelFile), filepath.Join(tmp, InitramfsFile))
			if err == nil {
				report(Progress{Stage: "initramfs", Item: strings.Join(resolved, " ")})
				log.Debug("initramfs modules", "modules", resolved)
			}
			return err
		}},
		{AgentFile, func(ctx context.Context) error {
			report(Progress{Stage: "agent", Item: opts.Agent.Package + "@" + opts.Agent.Version})
			return TarToExt4(filepath.Join(tmp, AgentFile), func(w io.Writer) error {
				n, err := writeAgentTar(ctx, w, agentTgz, opts.Agent)
				agentBinSize = n
				return err
			})
		}},
	}
	if err := runAll(ctx, log, jobs); err != nil {
		return nil, fmt.Errorf("build guest image: %w", err)
	}

	m.Sizes = map[string]int64{"downloads": downloaded, "agent-binary": agentBinSize}
	for _, name := range imageFiles() {
		fi, err := os.Stat(filepath.Join(tmp, name))
		if err != nil {
			return nil, fmt.Errorf("build guest image: %w", err)
		}
		m.Sizes[name] = fi.Size()
	}
	m.BuiltAt = time.Now().UTC()
	m.BuildSeconds = time.Since(start).Seconds()
	if err := writeManifest(tmp, &m); err != nil {
		return nil, err
	}
	final := filepath.Join(opts.Dir, m.Hash)
	if err := os.Rename(tmp, final); err != nil {
		// Another build of the same inputs may have finished first.
		if img, oerr := Open(opts.Dir, m.Hash); oerr == nil {
			return img, setCurrent(opts.Dir, m.Hash)
		}
		return nil, fmt.Errorf("move image into place: %w", err)
	}
	if err := setCurrent(opts.Dir, m.Hash); err != nil {
		return nil, err
	}
	log.Info("guest image built", "dir", final, "seconds", m.BuildSeconds,
		"rootfs", m.Sizes[RootFSFile], "initramfs", m.Sizes[InitramfsFile], "agent", m.Sizes[AgentFile])
	report(Progress{Stage: "done", Item: final})
	return Open(opts.Dir, m.Hash)
}

// withProgress returns a cache over the same directory as c whose
// downloads are reported to hook as well as to c's own hook.
func withProgress(c *download.Cache, hook func(download.Progress)) *download.Cache {
	own := c.Progress
	return &download.Cache{Dir: c.Dir, Client: c.Client, Proxy: c.Proxy, Logger: c.Logger, Progress: func(p download.Progress) {
		if own != nil {
			own(p)
		}
		hook(p)
	}}
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("build guest image: no images directory given")
	}
	if o.Downloads == nil {
		return errors.New("build guest image: no download cache given")
	}
	if len(o.Init) == 0 {
		return errors.New("build guest image: no sandbar-init binary given: build it with `make build`")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Arch != "amd64" && o.Arch != "arm64" {
		return fmt.Errorf("build guest image: unsupported architecture %q: use amd64 or arm64", o.Arch)
	}
	if o.Mirror == "" {
		o.Mirror = DefaultMirror
	}
	if len(o.Packages) == 0 {
		o.Packages = DefaultPackages()
	}
	if len(o.Modules) == 0 {
		o.Modules = kernel.DefaultModules()
	}
	if o.Agent == (AgentSpec{}) {
		o.Agent = DefaultAgent(o.Arch)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// job is one part of a build that can run alongside the others.
type job struct {
	name string
	run  func(context.Context) error
}

// runAll runs jobs concurrently and returns the first error; the first
// failure cancels the others' context.
func runAll(ctx context.Context, log *slog.Logger, jobs []job) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := job.run(ctx)
			log.Debug("build step finished", "step", job.name, "seconds", time.Since(start).Seconds(), "err", err)
			if err != nil {
				once.Do(func() {
					first = err
					cancel()
				})
			}
		}()
	}
	wg.Wait()
	return first
}

// removeStale deletes build directories abandoned before cutoff.
func removeStale(dir string, cutoff time.Time, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("remove abandoned image build", "dir", e.Name(), "err", err)
		}
	}
}

// networkError turns a failure to reach the network into ErrOffline, with
// the detail in the log, and wraps any other error with what was being done.
func networkError(doing string, err error, log *slog.Logger) error {
	if isOffline(err) {
		log.Warn("network unreachable", "doing", doing, "err", err)
		return ErrOffline
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func isOffline(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	return errors.Is(err, download.ErrNoNetwork) || errors.As(err, &dnsErr) || errors.As(err, &opErr) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}
