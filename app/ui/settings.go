package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"sandbar/app/doctor"
	"sandbar/app/imagebuild"
	"sandbar/app/net/hosttrust"
	"sandbar/app/session"
	"sandbar/app/store"
)

// Settings keys: the store's (store.SettingKey), as SettingsBackend takes
// them.
const (
	KeyDefaultCPUs      = string(store.SettingDefaultCPUs)
	KeyDefaultMemoryMiB = string(store.SettingDefaultMemoryMiB)
	KeyDefaultDiskGiB   = string(store.SettingDefaultDiskGiB)
	KeyDefaultAgent     = string(store.SettingDefaultAgent)
	KeyMemoryBudget     = string(store.SettingMemoryBudget)
	KeyAutoCommit       = string(store.SettingAutoCommit)
)

// SettingsBackend is what the Settings and first-run windows need beyond
// the session Service: settings, secrets (names only ever come back), the
// guest image, doctor's checks and launch at login. *Prefs implements it.
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
	// wrapping imagebuild.ErrNotBuilt when there is none.
	ImageStatus() (string, error)
	// RebuildImage builds the guest image (a cache hit when its inputs
	// did not change), calling progress with the stage and the fraction
	// done.
	RebuildImage(ctx context.Context, progress func(stage string, frac float64)) error

	DoctorChecks(ctx context.Context) []doctor.Check

	// HostCerts are the certificates this machine trusts beyond the stock
	// bundle, which sessions carry unless KeyHostCerts is off.
	HostCerts(ctx context.Context) (hosttrust.Result, error)

	// LaunchAtLogin says whether Sandbar starts at login, and whether
	// Sandbar can change that itself (macOS: no, System Settings does).
	LaunchAtLogin() (on, settable bool, err error)
	SetLaunchAtLogin(on bool) error
}

// SecretsBackend is what Prefs needs of the keyring; *secrets.Secrets
// implements it.
type SecretsBackend interface {
	Names(ctx context.Context) ([]string, error)
	Set(ctx context.Context, name, value string) error
	Delete(ctx context.Context, name string) error
}

// ImageBuilder is what Prefs needs of the guest-image builder;
// *imagebuild.Builder implements it.
type ImageBuilder interface {
	// Status describes the image sessions boot; an error wrapping
	// imagebuild.ErrNotBuilt when there is none.
	Status() (string, error)
	// Rebuild builds the image for this machine, calling progress with a
	// line for a person and the fraction done.
	Rebuild(ctx context.Context, progress func(stage string, frac float64)) error
}

// Doctor runs doctor's checks; *doctor.Doctor implements it.
type Doctor interface {
	Run(ctx context.Context) []doctor.Check
}

var (
	_ ImageBuilder = (*imagebuild.Builder)(nil)
	_ Doctor       = (*doctor.Doctor)(nil)
)

// Prefs is the real SettingsBackend: settings in the store, secrets in
// the keyring, the guest image from the one image builder, doctor's
// checks from app/doctor. main makes the parts and hands them in.
type Prefs struct {
	Store   *store.Store
	Secrets SecretsBackend
	// Images builds and describes the guest image; nil: none.
	Images ImageBuilder
	// Doctor runs doctor's checks; nil: no checks.
	Doctor Doctor
	// AutostartDir is where Linux desktops look for programs to start at
	// login (~/.config/autostart); Executable is what they start.
	AutostartDir string
	Executable   string
	// HostTrust finds the certificates this machine trusts beyond the
	// stock bundle; nil: none.
	HostTrust session.HostTrust
}

// NewPrefs returns Prefs of these parts, with the platform's places
// filled in: the autostart folder under the user's config folder and
// this executable.
func NewPrefs(st *store.Store, sec SecretsBackend, images ImageBuilder, doc Doctor) *Prefs {
	p := &Prefs{Store: st, Secrets: sec, Images: images, Doctor: doc}
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
	if p.Images == nil {
		return "", errors.New("no image builder is connected")
	}
	return p.Images.Status()
}

// RebuildImage implements SettingsBackend.
func (p *Prefs) RebuildImage(ctx context.Context, progress func(stage string, frac float64)) error {
	if p.Images == nil {
		return errors.New("no image builder is connected")
	}
	return p.Images.Rebuild(ctx, progress)
}

// DoctorChecks implements SettingsBackend.
func (p *Prefs) DoctorChecks(ctx context.Context) []doctor.Check {
	if p.Doctor == nil {
		return nil
	}
	return p.Doctor.Run(ctx)
}

// HostCerts implements SettingsBackend.
func (p *Prefs) HostCerts(ctx context.Context) (hosttrust.Result, error) {
	if p.HostTrust == nil {
		return hosttrust.Result{}, nil
	}
	return p.HostTrust.Collect(ctx)
}

// LaunchAtLogin implements SettingsBackend.
func (p *Prefs) LaunchAtLogin() (on, settable bool, err error) {
	return launchAtLogin(p.AutostartDir)
}

// SetLaunchAtLogin implements SettingsBackend.
func (p *Prefs) SetLaunchAtLogin(on bool) error {
	return setLaunchAtLogin(p.AutostartDir, p.Executable, on)
}
