package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"sandbar/app/imagebuild"
	"sandbar/app/sandbox"
	"sandbar/vm"
)

// hypervisor returns the backend this command line uses: SANDBAR_HYPERVISOR
// names one, else the platform's default.
func hypervisor(env *Env) (vm.Hypervisor, error) {
	if env.Hypervisors == nil {
		return nil, fmt.Errorf("no hypervisor backend is wired into this sandbar: %w", vm.ErrNotFound)
	}
	return env.Hypervisors.Get(env.Backend)
}

// imageOrBuild returns the newest built guest image, building one first
// (with its progress on stderr) when there is none.
func imageOrBuild(ctx context.Context, env *Env) (*imagebuild.Image, error) {
	img, err := env.Images.Latest()
	if err == nil {
		return img, nil
	}
	if !errors.Is(err, imagebuild.ErrNotBuilt) {
		return nil, err
	}
	fmt.Fprintln(env.Stderr, "no guest image yet: building it (once; later runs reuse it)")
	return buildImage(ctx, env, env.Stderr, "", "")
}

func vmRun(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar vm run")
	cpus := fs.Int("cpus", 1, "vCPUs")
	memory := fs.Int("memory", 1024, "memory in MiB")
	disk := fs.Float64("disk", 0, "scratch disk in GiB for the guest's writes (0: in guest memory)")
	network := fs.Bool("network", false, "give the guest a NAT network (default: none)")
	share := fs.String("share", "", "host folder mounted read-write at /workspace")
	readOnly := fs.Bool("read-only", false, "mount --share read-only")
	user := fs.String("user", sandbox.UserAgent, "run CMD as agent (uid 1000) or root")
	cwd := fs.String("cwd", "", "working directory in the guest (default /workspace with --share, else the user's home)")
	timeout := fs.Duration("timeout", 0, "kill CMD after this long (0: no limit)")
	stdin := fs.Bool("i", false, "pass this command's standard input to CMD")
	verbose := fs.Bool("v", false, "report the boot on standard error")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: sandbar vm run [flags] -- CMD [ARGS...]\n\n"+
			"Boots a throwaway VM from the guest image, runs CMD in it, streams its output,\n"+
			"exits with its exit code and shuts the VM down.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return UsageError{Msg: "sandbar vm run: no command: give one after --, as in `sandbar vm run -- uname -a`"}
	}
	if *disk < 0 || *memory <= 0 {
		return UsageError{Msg: "sandbar vm run: --disk and --memory must be positive"}
	}
	if *user != sandbox.UserAgent && *user != sandbox.UserRoot {
		return UsageError{Msg: fmt.Sprintf("sandbar vm run: --user %q: use agent or root", *user)}
	}
	var shareDir string
	if *share != "" {
		shareDir = *share
		if !filepath.IsAbs(shareDir) {
			shareDir = filepath.Join(env.WorkDir, shareDir)
		}
		fi, err := os.Stat(shareDir)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("--share %s: not a folder: give an existing folder", *share)
		}
		if *cwd == "" {
			*cwd = sandbox.DefaultWorkdir
		}
	}
	var input []byte
	if *stdin {
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		input = b
	}

	hv, err := hypervisor(env)
	if err != nil {
		return err
	}
	if err := env.Paths.Ensure(); err != nil {
		return err
	}
	img, err := imageOrBuild(ctx, env)
	if err != nil {
		return err
	}
	runDir := filepath.Join(env.Paths.Home, "run")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", runDir, err)
	}
	dir, err := os.MkdirTemp(runDir, "vm-")
	if err != nil {
		return fmt.Errorf("create a VM directory: %w", err)
	}
	defer os.RemoveAll(dir)

	logf := func(format string, a ...any) {
		if *verbose {
			fmt.Fprintf(env.Stderr, "sandbar: "+format+"\n", a...)
		}
	}
	if *verbose {
		st := hv.Check(ctx)
		logf("%s: %s", hv.Name(), st.Detail)
	}
	sb, err := sandbox.Boot(ctx, hv, img, sandbox.Options{
		Dir:           dir,
		CPUs:          *cpus,
		Memory:        uint64(*memory) * vm.MiB,
		ScratchSize:   int64(*disk * (1 << 30)),
		Share:         shareDir,
		ShareReadOnly: *readOnly,
		Network:       *network,
		Logger:        env.Logger,
	})
	if err != nil {
		return fmt.Errorf("boot the VM: %w", err)
	}
	logf("guest ready in %s (kernel %s, %d vCPUs, %d MiB)", sb.ReadyAfter.Round(time.Millisecond),
		sb.Ready.Kernel, sb.Ready.CPUs, sb.Ready.Memory/vm.MiB)
	if why := sb.NetError(); why != "" {
		fmt.Fprintf(env.Stderr, "sandbar: the VM has no network: %s\n", why)
	}

	res, execErr := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv: argv, Cwd: *cwd, User: *user, Timeout: *timeout, Stdin: input,
	}, env.Stdout, env.Stderr)

	// Shut down even when ctx was cancelled (Ctrl-C): never leave a VM.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := sb.Shutdown(stopCtx); err != nil {
		logf("shutdown: %v", err)
	}
	logf("VM stopped in %s", time.Since(start).Round(time.Millisecond))
	if execErr != nil {
		return execErr
	}
	if res.TimedOut {
		fmt.Fprintf(env.Stderr, "sandbar: %s timed out after %s and was killed\n", argv[0], *timeout)
	}
	if res.Code != 0 {
		return ExitError{Code: res.Code}
	}
	return nil
}
