package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// HostSystem is a System for running the real supervisor on a host, in
// tests and in vm/vmtest's in-process machine: every user is the current
// user with a home under Home, the clock is left alone, and power-off is
// recorded rather than done.
type HostSystem struct {
	// Home holds one home directory per guest user name.
	Home string

	mu        sync.Mutex
	poweroffs int
	clock     []time.Time
}

// Facts implements System with the host's kernel-neutral facts.
func (h *HostSystem) Facts() (string, int, uint64) {
	return "host-" + runtime.GOOS, runtime.NumCPU(), 2 << 30
}

// EnsureUser implements System: the user is the current one.
func (h *HostSystem) EnsureUser(name string, _ int, _ string) (User, error) {
	home := filepath.Join(h.Home, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return User{}, fmt.Errorf("create home for %s: %w", name, err)
	}
	return User{Name: name, UID: os.Getuid(), GID: os.Getgid(), Home: home}, nil
}

// LookupUser implements System: a host has no image's accounts.
func (h *HostSystem) LookupUser(string) (User, bool, error) { return User{}, false, nil }

// SetTime implements System by recording t.
func (h *HostSystem) SetTime(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clock = append(h.clock, t)
	return nil
}

// DiskUsage implements System like LinuxSystem would, for any path.
func (h *HostSystem) DiskUsage(path string) (used, total uint64, err error) {
	return diskUsage(path)
}

// Poweroff implements System by counting.
func (h *HostSystem) Poweroff() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.poweroffs++
	return nil
}

// Poweroffs reports how many times the supervisor asked to power off.
func (h *HostSystem) Poweroffs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.poweroffs
}
