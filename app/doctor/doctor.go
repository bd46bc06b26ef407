// Package doctor checks that this machine can run Sandbar: the
// hypervisor, the guest image, the keyring, storage and git. Each check
// gives a Check, a verdict with what to do about it, which `sandbar
// doctor` prints and the windows (Settings, first run) show.
//
// It is not a repair tool: it changes nothing on the machine (it creates
// no folder, builds no image, stores no secret), and it neither prints
// nor draws; its callers do.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zalando/go-keyring"
	"golang.org/x/sys/unix"

	"sandbar/app/config"
	"sandbar/guest/image"
	"sandbar/vm"
)

// Check is the verdict of one check. OK false means Sandbar cannot work
// until it is fixed; Warn means it works, but worse than it could. Fix,
// when set, says what to do, in words a person can act on.
//
// Summary, when set, says in one plain sentence what the verdict means
// for a person; Detail then holds the raw findings (a QEMU assertion, a
// trial boot's timing), which a window keeps behind a disclosure and the
// CLI prints as they are. Without a Summary, Detail is itself plain.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Warn    bool   `json:"warn"`
	Summary string `json:"summary,omitempty"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix"`
}

func okResult(name, detail string) Check {
	return Check{Name: name, OK: true, Detail: detail}
}

func warnResult(name, detail, fix string) Check {
	return Check{Name: name, OK: true, Warn: true, Detail: detail, Fix: fix}
}

func failResult(name, detail, fix string) Check {
	return Check{Name: name, Detail: detail, Fix: fix}
}

// Symbol is how a check's line starts: ✓, ! (a warning) or ✗.
func (c Check) Symbol() string {
	switch {
	case !c.OK:
		return "✗"
	case c.Warn:
		return "!"
	}
	return "✓"
}

// Doctor holds what the checks look at: plain parts, handed in by main.
type Doctor struct {
	// Paths is the data directory (its free space; the guest images).
	Paths config.Paths
	// Hypervisors are the VM backends built in (nil: none); Backend names
	// the one to use ("" for the platform's default).
	Hypervisors *vm.Registry
	Backend     string
}

// Checks are the checks, in the order they are shown, each run when
// called: the CLI prints a line as soon as its check is done, since the
// hypervisor's may take a trial boot.
func (d *Doctor) Checks(ctx context.Context) []func() Check {
	return []func() Check{
		func() Check { return checkHypervisor(ctx, d.Hypervisors, d.Backend) },
		func() Check { return checkImage(d.Paths.Images) },
		func() Check { return checkKeyring(ctx, runtime.GOOS, keyringProbeTimeout) },
		func() Check { return checkStorage(d.Paths) },
		func() Check { return checkGit(ctx) },
	}
}

// Run runs every check (hypervisor, guest image, keyring, storage, git)
// one after the other and returns their verdicts. The hypervisor's may
// take a trial boot and the keyring's up to 5 seconds, so a window calls
// it off the UI goroutine.
func (d *Doctor) Run(ctx context.Context) []Check {
	checks := d.Checks(ctx)
	out := make([]Check, 0, len(checks))
	for _, c := range checks {
		out = append(out, c())
	}
	return out
}

const (
	// keyringProbeTimeout bounds the keyring check: a locked keyring may
	// put up a prompt and wait for a person.
	keyringProbeTimeout = 5 * time.Second
	// keyringService and keyringProbe name an item that never exists, so
	// a reachable keyring answers "not found".
	keyringService = "Sandbar"
	keyringProbe   = "sandbar-doctor-probe"

	// Free space on the data directory's file system below which storage
	// is a warning, and below which it is a failure.
	storageGood = 10 << 30
	storageMin  = 2 << 30

	// gitMajor.gitMinor is the oldest git Sandbar supports.
	gitMajor, gitMinor = 2, 25
)

// checkHypervisor asks the configured VM backend whether it can run guests
// here, and how fast.
func checkHypervisor(ctx context.Context, hvs *vm.Registry, backend string) Check {
	const name = "hypervisor"
	hv, err := hypervisor(hvs, backend)
	if err != nil {
		fix := "this sandbar was built without a VM backend: install an official build"
		if backend != "" && hvs != nil {
			fix = fmt.Sprintf("unset SANDBAR_HYPERVISOR, or set it to one of: %s", strings.Join(hvs.Names(), ", "))
		}
		return failResult(name, err.Error(), fix)
	}
	st := hv.Check(ctx)
	detail := hv.Name() + ": " + st.Detail
	switch {
	case st.Available && st.Accelerated:
		c := okResult(name, detail)
		c.Summary = hypervisorSummary(runtime.GOOS, true)
		return c
	case st.Available:
		// Detail says why there is no acceleration, in the backend's
		// words (a QEMU assertion, say): the summary says what it means.
		fix := "sessions still work, only slower; for full speed make KVM work (the details say what failed): enable virtualization in the firmware, add yourself to the kvm group, or turn on nested virtualization when this machine is itself a VM"
		if runtime.GOOS == "darwin" {
			fix = "sessions still work, only slower; for full speed use Virtualization.framework: unset SANDBAR_HYPERVISOR"
		}
		c := warnResult(name, detail, fix)
		c.Summary = hypervisorSummary(runtime.GOOS, false)
		return c
	}
	// Detail says what is missing and how to get it, plainly: it is the
	// fix, so it gets no summary to hide behind.
	return failResult(name, detail, "")
}

// hypervisorSummary says in plain words what a usable hypervisor means
// for sessions on goos: full speed, or about ten times slower.
func hypervisorSummary(goos string, accelerated bool) string {
	switch {
	case accelerated && goos == "darwin":
		return "Virtualization.framework works: sessions run at full speed."
	case accelerated:
		return "KVM works: sessions run at full speed."
	case goos == "darwin":
		return "Virtualization.framework is not in use — sessions run about 10× slower under emulation."
	}
	return "KVM is not usable here — sessions run about 10× slower under emulation."
}

// hypervisor is the backend backend names, else the platform's default.
func hypervisor(hvs *vm.Registry, backend string) (vm.Hypervisor, error) {
	if hvs == nil {
		return nil, fmt.Errorf("no hypervisor backend is wired into this sandbar: %w", vm.ErrNotFound)
	}
	return hvs.Get(backend)
}

// checkImage looks for a complete guest image in dir.
func checkImage(dir string) Check {
	const name = "guest image"
	const build = "run `sandbar image build` (about a minute, downloads ~150 MB)"
	img, err := image.Latest(dir)
	switch {
	case errors.Is(err, image.ErrNotBuilt):
		if why := firstDamagedImage(dir); why != nil {
			return failResult(name, "no usable guest image: "+why.Error(), build)
		}
		return failResult(name, "no guest image in "+dir, build)
	case err != nil:
		return failResult(name, err.Error(), fmt.Sprintf("make %s a readable folder (or set SANDBAR_IMAGE_DIR to one), then %s", dir, build))
	}
	m := img.Manifest
	return okResult(name, fmt.Sprintf("%s (%s): kernel %s, %d packages, agent %s, built %s",
		shortHash(m.Hash), m.Arch, m.Kernel.Version, len(m.Packages), m.Agent.Version, m.BuiltAt.Local().Format("2006-01-02 15:04")))
}

// firstDamagedImage returns why the first image directory in dir cannot be
// opened, or nil when there is none: image.Latest passes damaged images
// over in silence, but a person asking what is wrong wants to know.
func firstDamagedImage(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() || len(e.Name()) != 64 {
			continue
		}
		if _, err := image.Open(dir, e.Name()); err != nil && !errors.Is(err, image.ErrNotBuilt) {
			return err
		}
	}
	return nil
}

// checkKeyring looks up an item that never exists: "not found" means the
// keyring answers and is unlocked. goos picks the words of the verdict.
func checkKeyring(ctx context.Context, goos string, timeout time.Duration) Check {
	const name = "keyring"
	kind, fix := "Secret Service", "start a Secret Service provider such as gnome-keyring and unlock it (or run inside a desktop session)"
	if goos == "darwin" {
		kind, fix = "Keychain", "unlock the login keychain (Keychain Access, or `security unlock-keychain`) and run `sandbar doctor` again"
	}
	if goos == "linux" && !sessionBusKnown() {
		return failResult(name, "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)", fix)
	}
	// go-keyring takes no context and may wait for ever on a prompt, so
	// the lookup runs on its own; if it outlives the timeout it is left
	// behind, and ends with the process.
	done := make(chan error, 1)
	go func() {
		_, err := keyring.Get(keyringService, keyringProbe)
		done <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		return failResult(name, fmt.Sprintf("the %s did not answer within %s (locked, waiting on an unlock prompt, or hung)", kind, timeout), fix)
	case <-ctx.Done():
		return failResult(name, "keyring check interrupted: "+ctx.Err().Error(), fix)
	}
	if errors.Is(err, keyring.ErrNotFound) {
		return okResult(name, "keyring reachable ("+kind+")")
	}
	if err == nil {
		// Someone stored the probe; the keyring still answered.
		return okResult(name, "keyring reachable ("+kind+")")
	}
	return failResult(name, fmt.Sprintf("the %s cannot be used: %s", kind, oneLine(err.Error())), fix)
}

// sessionBusKnown says whether a D-Bus session bus can be found the way
// godbus looks for one. Without it godbus would run dbus-launch, which
// starts a stray bus daemon that outlives us.
func sessionBusKnown() bool {
	if addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" && addr != "autolaunch:" {
		return true
	}
	_, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid()))
	return err == nil
}

// oneLine shortens a low-level error to one line of reasonable length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 160
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// checkStorage reports where Sandbar keeps its data and how much room is
// left there.
func checkStorage(p config.Paths) Check {
	const name = "storage"
	free, at, err := freeSpace(p.Home)
	if err != nil {
		return failResult(name, fmt.Sprintf("data in %s: %v", p.Home, err), "set SANDBAR_HOME to a folder you can write to")
	}
	detail := fmt.Sprintf("data in %s", p.Home)
	if at != p.Home {
		detail += " (not created yet)"
	}
	detail += fmt.Sprintf(": %s free", HumanBytes(int64(free)))
	if !isWithin(p.Images, p.Home) {
		if ifree, _, err := freeSpace(p.Images); err == nil {
			detail += fmt.Sprintf("; images in %s: %s free", p.Images, HumanBytes(int64(ifree)))
		} else {
			detail += fmt.Sprintf("; images in %s: %v", p.Images, err)
		}
	}
	return storageVerdict(detail, free)
}

// storageVerdict judges free bytes on the data directory's file system.
func storageVerdict(detail string, free uint64) Check {
	const name = "storage"
	const fix = "sessions need ~1 GiB each plus their scratch disks: free some space or set SANDBAR_HOME to a larger disk"
	switch {
	case free >= storageGood:
		return okResult(name, detail)
	case free >= storageMin:
		return warnResult(name, detail, fix)
	}
	return failResult(name, detail, fix)
}

// freeSpace returns the bytes an unprivileged user may still write on the
// file system holding path, or its nearest existing parent (which it
// returns as at) when path does not exist yet.
func freeSpace(path string) (free uint64, at string, err error) {
	at = filepath.Clean(path)
	for {
		var st unix.Statfs_t
		err := unix.Statfs(at, &st)
		if err == nil {
			return uint64(st.Bavail) * uint64(st.Bsize), at, nil
		}
		parent := filepath.Dir(at)
		if !errors.Is(err, fs.ErrNotExist) || parent == at {
			return 0, at, fmt.Errorf("free space of %s: %w", at, err)
		}
		at = parent
	}
}

// isWithin reports whether path is dir or inside it.
func isWithin(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkGit runs the git found on PATH, the one sessions use.
func checkGit(ctx context.Context) Check {
	const name = "git"
	out, err := exec.CommandContext(ctx, "git", "--version").Output()
	if errors.Is(err, exec.ErrNotFound) {
		return failResult(name, "git is not installed", "run `sudo apt install git` (Linux) / `xcode-select --install` (macOS)")
	}
	if err != nil {
		return failResult(name, "`git --version` failed: "+oneLine(err.Error()), "reinstall git: `sudo apt install --reinstall git` (Linux) / `xcode-select --install` (macOS)")
	}
	version := strings.TrimSpace(string(out))
	major, minor, ok := gitVersion(version)
	if !ok {
		return warnResult(name, fmt.Sprintf("cannot tell the version of git from %q", version),
			fmt.Sprintf("make sure `git --version` prints the version of a git %d.%d or newer", gitMajor, gitMinor))
	}
	if major < gitMajor || major == gitMajor && minor < gitMinor {
		return failResult(name, fmt.Sprintf("%s is too old: Sandbar needs git %d.%d or newer", version, gitMajor, gitMinor),
			"update git: `sudo apt install git` from a newer release of your distribution (Linux) / `brew install git` (macOS)")
	}
	return okResult(name, version)
}

// gitVersion reads major and minor from `git --version`'s output, e.g.
// "git version 2.39.5" or "git version 2.39.5 (Apple Git-154)".
func gitVersion(s string) (major, minor int, ok bool) {
	rest, found := strings.CutPrefix(s, "git version ")
	if !found {
		return 0, 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, 0, false
	}
	parts := strings.SplitN(fields[0], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// shortHash is an image's hash as people see it.
func shortHash(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// HumanBytes says n bytes the way all of Sandbar does (doctor's checks,
// the command line, the windows): 1.5 GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
