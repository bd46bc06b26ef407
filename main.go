// Command sandbar runs coding agents in lightweight Linux VMs, one per
// session, each on its own local clone of a repository.
//
// With no arguments (or `sandbar gui`) it is the menu-bar app; with
// arguments it is the command line (`sandbar help`). main only wires: it
// reads the environment into a config value, builds the real parts and
// hands them to the GUI (main_gui.go) or the CLI.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"sandbar/app/cli"
	"sandbar/app/cli/termsafe"
	"sandbar/app/config"
	"sandbar/app/enginelog"
	"sandbar/app/imagebuild"
	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hosttrust"
	"sandbar/app/sandbox"
	"sandbar/app/session"
	"sandbar/guest/image"
	"sandbar/vm"
	"sandbar/vm/qemu"
	"sandbar/vm/vz"
)

// version is set by `make build` from git describe.
var version = "dev"

// closeGrace bounds how long quitting waits for sessions to stop.
const closeGrace = 30 * time.Second

func main() {
	os.Exit(run())
}

func run() int {
	paths, err := config.Resolve(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbar:", err)
		return 1
	}
	level := slog.LevelWarn
	if os.Getenv("SANDBAR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	// A line that cannot be written (engine.log on a full disk) is held
	// and written once space is back, or counted there.
	logger := slog.New(slog.NewTextHandler(&enginelog.Writer{W: os.Stderr}, &slog.HandlerOptions{Level: level}))
	// gvisor-tap-vsock's DHCP service (in each session's network) logs
	// through logrus's process-wide logger: what a guest's odd DHCP
	// packets make it say goes nowhere unless debugging.
	if level != slog.LevelDebug {
		logrus.SetOutput(io.Discard)
	}
	wd, _ := os.Getwd()
	self, _ := os.Executable()
	// The host's proxy, read once: a setting that does not parse fails
	// whatever would use it (the engine, an image build), with the
	// message saying which variable and what to do.
	proxy, proxyErr := hostproxy.System(context.Background(), os.LookupEnv)
	p := &parts{
		paths:             paths,
		logger:            logger,
		hypervisors:       hypervisors(paths, logger),
		backend:           os.Getenv("SANDBAR_HYPERVISOR"),
		images:            &imagebuild.Builder{Paths: paths, WorkDir: wd, Proxy: proxyFunc(proxy, proxyErr), Logger: logger},
		proxy:             proxy,
		proxyErr:          proxyErr,
		self:              self,
		environ:           os.Environ(),
		anthropicUpstream: os.Getenv(session.EnvAnthropicUpstream),
		hostTrust:         hosttrust.Source{Dir: os.Getenv(hosttrust.EnvDir), Logger: logger},
		sshAuth:           sshAuth(),
	}
	p.images.Template = func(ctx context.Context, img *imagebuild.Image) error {
		hv, err := p.hypervisors.Get(p.backend)
		if err != nil {
			return err
		}
		if _, ok := hv.(vm.Templater); !ok {
			return nil // this backend boots every session (vz, for now)
		}
		return sandbox.EnsureTemplate(ctx, hv, img)
	}
	defer func() {
		// Sessions this process runs were stopped by whoever ran them
		// (the GUI, `sandbar serve`); what is left is closing.
		ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
		defer cancel()
		if err := p.close(ctx); err != nil {
			logger.Warn("close", "err", err)
		}
	}()
	env := p.cliEnv(&cli.Env{
		Stdin:         os.Stdin,
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		IsTerminal:    isTerminal(os.Stdout),
		ErrIsTerminal: isTerminal(os.Stderr),
		Term:          os.Getenv("TERM"),
		WorkDir:       wd,
		Version:       version,
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if gui, args := command(os.Args[1:]); gui {
		err = runGUI(ctx, p, env)
	} else {
		err = cli.Run(ctx, env, args)
	}
	var exit cli.ExitError
	var usage cli.UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "sandbar:", termsafe.Text(usage.Msg))
		return 2
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "sandbar: interrupted")
		return 130
	default:
		// An error may quote the guest (an agent's failure, a file
		// name, the engine passing on the supervisor's words).
		fmt.Fprintln(os.Stderr, "sandbar:", termsafe.Text(err.Error()))
		return 1
	}
}

// proxyFunc is http.Transport's Proxy for the host's proxy, or one that
// fails every request with err when the settings could not be read.
func proxyFunc(c *hostproxy.Config, err error) func(*http.Request) (*url.URL, error) {
	if err != nil {
		return func(*http.Request) (*url.URL, error) { return nil, err }
	}
	return c.HTTPProxy
}

// command says whether args (without the program name) ask for the
// menu-bar app, and otherwise what the command line is given. The first
// Finder launch of a quarantined app passes a process serial number
// (-psn_0_12345) that is neither a command nor a flag: such arguments are
// dropped, so that launch opens the app rather than failing as an
// unknown command.
func command(args []string) (gui bool, rest []string) {
	rest = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "-psn_") })
	return len(rest) == 0 || len(rest) == 1 && rest[0] == "gui", rest
}

// hypervisors registers the VM backends: Virtualization.framework is the
// default on macOS, QEMU everywhere else (and on a Mac that has it).
func hypervisors(paths config.Paths, logger *slog.Logger) *vm.Registry {
	r := vm.NewRegistry()
	r.Register(qemu.New(qemu.Config{
		StateDir: paths.Home,
		Accel:    os.Getenv("SANDBAR_ACCEL"),
		TrialImage: func() (string, string, error) {
			img, err := image.Latest(paths.Images)
			if err != nil {
				return "", "", err
			}
			return img.Kernel, img.Initramfs, nil
		},
		Logger: logger,
	}), runtime.GOOS != "darwin")
	r.Register(vz.New(vz.Config{Logger: logger}), runtime.GOOS == "darwin")
	return r
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
