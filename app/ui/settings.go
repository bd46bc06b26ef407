package ui

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"sandbar/app/cli"
	"sandbar/app/config"
	"sandbar/app/store"
	"sandbar/guest/image"
	"sandbar/guest/image/download"
	"sandbar/guest/initbin"
)

// Settings keys: the store's (store.SettingKey), as SettingsBackend takes
// them.
const (
	KeyDefaultCPUs      = string(store.SettingDefaultCPUs)
	KeyDefaultMemoryMiB = string(store.SettingDefaultMemoryMiB)
	KeyDefaultDiskGiB   = string(store.SettingDefaultDiskGiB)
	KeyDefaultAgent     = string(store.SettingDefaultAgent)
	KeyMemoryBudget     = string(store.SettingMemoryBudget)
)

// SettingsBackend is what the Settings and first-run windows need beyond
// Backend: settings, secrets (names only ever come back), the guest
// image, storage, doctor's checks and launch at login. *Prefs implements
// it.
type SettingsBackend interface {
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error

	SecretNames(ctx context.Context) ([]string, error)
	SetSecret(ctx context.Context, name, value string) error
	DeleteSecret(ctx context.Context, name string) error
	// SecretBrokers are the secrets bound to a host, by name: the VM
	// holds a stand-in, and the broker puts the value in the header of
	// HTTPS requests to that host alone.
	SecretBrokers(ctx context.Context) (map[string]store.SecretBroker, error)
	// SetSecretBroker binds a recorded secret to a host and header (see
	// session.SecretBinding); an empty Host makes it a plain secret.
	SetSecretBroker(ctx context.Context, name string, b store.SecretBroker) error

	// ImageStatus describes the guest image sessions boot; an error
	// wrapping image.ErrNotBuilt when there is none.
	ImageStatus() (string, error)
	// RebuildImage builds the guest image (a cache hit when its inputs
	// did not change), calling progress with the stage and the fraction
	// done.
	RebuildImage(ctx context.Context, progress func(stage string, frac float64)) error

	// SessionDiskUsage is, per session id, the bytes removing the session
	// would free.
	SessionDiskUsage(ctx context.Context) (map[string]int64, error)
	DoctorChecks(ctx context.Context) []Check

	// LaunchAtLogin says whether Sandbar starts at login, and whether
	// Sandbar can change that itself (macOS: no, System Settings does).
	LaunchAtLogin() (on, settable bool, err error)
	SetLaunchAtLogin(on bool) error
}

// Check is one of doctor's verdicts. OK false: Sandbar cannot work until
// it is fixed; Warn: it works, worse than it could. Fix says what to do.
type Check struct {
	Name   string
	OK     bool
	Warn   bool
	Detail string
	Fix    string
}

// SecretsBackend is what Prefs needs of the keyring; *secrets.Secrets
// implements it.
type SecretsBackend interface {
	Names(ctx context.Context) ([]string, error)
	Set(ctx context.Context, name, value string) error
	Delete(ctx context.Context, name string) error
}

// Prefs is the real SettingsBackend: settings in the store, secrets in
// the keyring, images and sessions under Paths, doctor's checks from the
// CLI.
type Prefs struct {
	Store   *store.Store
	Secrets SecretsBackend
	Paths   config.Paths
	// Doctor is the environment doctor's checks run in (its Paths and
	// Hypervisors); nil: no checks.
	Doctor *cli.Env
	// Build builds the guest image; nil: BuildGuestImage with Paths and
	// WorkDir.
	Build func(ctx context.Context, progress func(image.Progress)) (*image.Image, error)
	// WorkDir is where a development build looks for the source of the
	// guest init when the binary does not embed it.
	WorkDir string
	// AutostartDir is where Linux desktops look for programs to start at
	// login (~/.config/autostart); Executable is what they start.
	AutostartDir string
	Executable   string
}

// NewPrefs returns Prefs with the platform's places filled in: the
// autostart folder under the user's config folder and this executable.
func NewPrefs(st *store.Store, sec SecretsBackend, env *cli.Env) *Prefs {
	p := &Prefs{Store: st, Secrets: sec, Doctor: env}
	if env != nil {
		p.Paths, p.WorkDir = env.Paths, env.WorkDir
	}
	if dir, err := os.UserConfigDir(); err == nil {
		p.AutostartDir = filepath.Join(dir, "autostart")
	}
	p.Executable, _ = os.Executable()
	return p
}

var _ SettingsBackend = (*Prefs)(nil)

// Setting implements SettingsBackend.
func (p *Prefs) Setting(ctx context.Context, key string) (string, bool, error) {
	return p.Store.Setting(ctx, store.SettingKey(key))
}

// SetSetting implements SettingsBackend.
func (p *Prefs) SetSetting(ctx context.Context, key, value string) error {
	return p.Store.SetSetting(ctx, store.SettingKey(key), value)
}

// SecretNames implements SettingsBackend.
func (p *Prefs) SecretNames(ctx context.Context) ([]string, error) {
	if p.Secrets == nil {
		return nil, nil
	}
	return p.Secrets.Names(ctx)
}

// SetSecret implements SettingsBackend.
func (p *Prefs) SetSecret(ctx context.Context, name, value string) error {
	if p.Secrets == nil {
		return errors.New("no keyring is connected")
	}
	return p.Secrets.Set(ctx, name, value)
}

// DeleteSecret implements SettingsBackend.
func (p *Prefs) DeleteSecret(ctx context.Context, name string) error {
	if p.Secrets == nil {
		return errors.New("no keyring is connected")
	}
	return p.Secrets.Delete(ctx, name)
}

// SecretBrokers implements SettingsBackend.
func (p *Prefs) SecretBrokers(ctx context.Context) (map[string]store.SecretBroker, error) {
	return p.Store.SecretBrokers(ctx)
}

// SetSecretBroker implements SettingsBackend.
func (p *Prefs) SetSecretBroker(ctx context.Context, name string, b store.SecretBroker) error {
	return p.Store.SetSecretBroker(ctx, name, b)
}

// ImageStatus implements SettingsBackend.
func (p *Prefs) ImageStatus() (string, error) {
	img, err := image.Latest(p.Paths.Images)
	if err != nil {
		return "", err
	}
	m := img.Manifest
	hash := m.Hash
	if len(hash) > 12 {
		hash = hash[:12]
	}
	return fmt.Sprintf("%s (%s): kernel %s, %d packages, agent %s, built %s",
		hash, m.Arch, m.Kernel.Version, len(m.Packages), m.Agent.Version, m.BuiltAt.Local().Format("2006-01-02 15:04")), nil
}

// RebuildImage implements SettingsBackend.
func (p *Prefs) RebuildImage(ctx context.Context, progress func(stage string, frac float64)) error {
	build := p.Build
	if build == nil {
		build = func(ctx context.Context, f func(image.Progress)) (*image.Image, error) {
			return BuildGuestImage(ctx, p.Paths, p.WorkDir, f)
		}
	}
	_, err := build(ctx, func(pr image.Progress) {
		if progress != nil {
			progress(ImageStage(pr))
		}
	})
	return err
}

// BuildGuestImage builds (or finds in the cache) the guest image for this
// machine's architecture, as `sandbar image build` does, reporting
// progress to f.
func BuildGuestImage(ctx context.Context, paths config.Paths, workDir string, f func(image.Progress)) (*image.Image, error) {
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	initBin, err := initbin.Binary()
	if errors.Is(err, initbin.ErrNotEmbedded) {
		root, rerr := initbin.ModuleRoot(workDir)
		if rerr != nil {
			return nil, err
		}
		initBin, err = initbin.Build(ctx, root, runtime.GOARCH)
	}
	if err != nil {
		return nil, err
	}
	return image.Build(ctx, image.Options{
		Dir:       paths.Images,
		Downloads: &download.Cache{Dir: paths.Downloads},
		Arch:      runtime.GOARCH,
		Init:      initBin,
		Progress:  f,
	})
}

// ImageStage turns an image build's progress into a line for a person
// and the fraction of the build done. Downloads are most of a cold build.
func ImageStage(pr image.Progress) (string, float64) {
	switch pr.Stage {
	case "index":
		return "Reading the Debian package index…", 0.02
	case "download":
		frac := 0.05
		if pr.Of > 0 {
			frac += 0.6 * float64(min(pr.Count, pr.Of)) / float64(pr.Of)
		}
		what := "Downloading packages"
		if pr.Of > 0 {
			what = fmt.Sprintf("Downloading packages (%d of %d)", min(pr.Count, pr.Of), pr.Of)
		}
		return what + "…", frac
	case "rootfs":
		return "Writing the root disk…", 0.7
	case "kernel":
		return "Preparing the kernel…", 0.8
	case "initramfs":
		return "Writing the initramfs…", 0.85
	case "agent":
		return "Writing the agent disk…", 0.9
	case "done":
		return "Image ready", 1
	}
	return pr.Stage, 0
}

// SessionDiskUsage implements SettingsBackend: for each folder under
// sessions/, the bytes its files take on disk (allocated blocks, so a
// sparse scratch disk counts what it holds, not its size). Files with
// other hard links (a clone's objects, shared with the repository) are
// left out: removing the session frees nothing of them.
func (p *Prefs) SessionDiskUsage(ctx context.Context) (map[string]int64, error) {
	return sessionDiskUsage(ctx, p.Paths.Sessions())
}

func sessionDiskUsage(ctx context.Context, dir string) (map[string]int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions in %s: %w", dir, err)
	}
	out := make(map[string]int64, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var total int64
		err := filepath.WalkDir(filepath.Join(dir, e.Name()), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone or unreadable: nothing to count
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				if !d.IsDir() && st.Nlink > 1 {
					return nil
				}
				total += int64(st.Blocks) * 512
			} else {
				total += info.Size()
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[e.Name()] = total
	}
	return out, nil
}

// DoctorChecks implements SettingsBackend.
func (p *Prefs) DoctorChecks(ctx context.Context) []Check {
	if p.Doctor == nil {
		return nil
	}
	var out []Check
	for _, r := range cli.DoctorChecks(ctx, p.Doctor) {
		out = append(out, Check{Name: r.Name, OK: r.OK, Warn: r.Warn, Detail: r.Detail, Fix: r.Fix})
	}
	return out
}

// LaunchAtLogin implements SettingsBackend.
func (p *Prefs) LaunchAtLogin() (on, settable bool, err error) {
	return launchAtLogin(p.AutostartDir)
}

// SetLaunchAtLogin implements SettingsBackend.
func (p *Prefs) SetLaunchAtLogin(on bool) error {
	return setLaunchAtLogin(p.AutostartDir, p.Executable, on)
}
