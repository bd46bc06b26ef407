package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sandbar/app/store"
	"sandbar/vm"
)

// Defaults for Options left zero.
const (
	DefaultCPUs      = 2
	DefaultMemoryMiB = 2048
	DefaultDiskGiB   = 8
	DefaultBudget    = 0.6
)

// Options for Start.
type Options struct {
	// Project is a project id, name or path; Repo is a repository path
	// that is added as a project first if need be. One is required.
	Project string
	Repo    string
	// Base is the branch, tag or commit to start from; default the
	// source's current branch.
	Base   string
	Prompt string
	// Title is what the session is called; "" makes one from the prompt
	// (TitleFor).
	Title string
	Agent AgentSpec
	// Limits; zero means the default (settings, else the constants).
	CPUs      int
	MemoryMiB int
	DiskGiB   int
	// NoNetwork turns the guest's network off (default on).
	NoNetwork bool
	// Network is the session's egress mode: "off", "allowlist" or
	// "open"; "" follows the project's and Sandbar's settings.
	Network     string
	Timeout     time.Duration // wall clock; 0 = none
	IdleTimeout time.Duration // 0 = none
	// IdleStop stops the session at the idle timeout instead of marking it
	// waiting.
	IdleStop bool
	// Env is the environment to run in: EnvProject ("" too: the
	// repository's trusted devcontainer.json when it has one) or
	// EnvDefault (Sandbar's own image).
	Env string
	// Root runs the agent on an image's root file system (a project's
	// environment) instead of Sandbar's own Debian image; nil: Sandbar's.
	// Every boot of the session (restarts too) uses it.
	Root *RootImage `json:",omitempty"`
	// On is the remote host to run on (sandbar hosts); "" for this
	// machine; OnAuto for the one of them with the most free memory that
	// fits the session. Every boot of the session (restarts too) runs
	// where it started.
	On string `json:",omitempty"`
}

// limits fills opts' zero limits from the settings, then the defaults.
func (m *Manager) limits(ctx context.Context, o *Options, cpus int) {
	get := func(key store.SettingKey, def int) int {
		if v, ok, _ := m.cfg.Store.Setting(ctx, key); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
				return n
			}
		}
		return def
	}
	if o.CPUs == 0 {
		o.CPUs = min(get(store.SettingDefaultCPUs, DefaultCPUs), cpus)
	}
	if o.MemoryMiB == 0 {
		o.MemoryMiB = get(store.SettingDefaultMemoryMiB, DefaultMemoryMiB)
	}
	if o.DiskGiB == 0 {
		o.DiskGiB = get(store.SettingDefaultDiskGiB, DefaultDiskGiB)
	}
	if o.Agent.Command == "" {
		if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingDefaultAgent); ok && strings.TrimSpace(v) != "" {
			o.Agent = AgentSpec{Command: "sh", Args: []string{"-c", v}}
		}
	}
}

// validate refuses impossible limits and modes; at is the machine the
// session runs on, whose cores bound its vCPUs.
func (m *Manager) validate(o Options, at place) error {
	var problems []string
	if o.CPUs < 1 || o.CPUs > at.CPUs {
		problems = append(problems, fmt.Sprintf("vCPUs is %d: give 1 to %d (%s's cores)", o.CPUs, at.CPUs, at.name()))
	}
	if uint64(o.MemoryMiB)*vm.MiB < vm.MinMemory {
		problems = append(problems, fmt.Sprintf("memory is %d MiB: give at least %d MiB", o.MemoryMiB, vm.MinMemory/vm.MiB))
	}
	if o.DiskGiB < 1 || o.DiskGiB > 1024 {
		problems = append(problems, fmt.Sprintf("disk is %d GiB: give 1 to 1024 GiB", o.DiskGiB))
	}
	if o.Timeout < 0 || o.IdleTimeout < 0 {
		problems = append(problems, "timeouts must not be negative")
	}
	switch o.Network {
	case "", NetworkOff, NetworkAllowlist, NetworkOpen:
	default:
		problems = append(problems, fmt.Sprintf("network %q is not a mode: use allowlist, open or off", o.Network))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(problems, "; "), ErrBadOptions)
	}
	if o.Root != nil {
		return o.Root.check()
	}
	return nil
}
