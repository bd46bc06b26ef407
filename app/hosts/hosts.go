// Package hosts keeps the remote machines sessions can run on (`sandbar
// hosts add NAME ssh://user@host`): it checks a host before recording it,
// records it in the store, and gives each its vm/libvirt backend, made
// once per host for the life of the process.
//
// It is not the backend (vm/libvirt) nor where a session runs (the
// session manager asks it for a host's backend by name).
package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"sandbar/app/store"
	"sandbar/vm"
	"sandbar/vm/libvirt"
)

// Config is what logging in takes, as ssh does it.
type Config struct {
	// Auth is the SSH agent, known_hosts and the person's own keys.
	Auth libvirt.Auth
	// Owner is written in every domain's metadata (this machine, this
	// process).
	Owner  string
	Logger *slog.Logger
}

// Hosts is the data directory's hosts.
type Hosts struct {
	st  *store.Store
	cfg Config
	log *slog.Logger

	mu  sync.Mutex
	hvs map[string]*libvirt.Hypervisor
}

// New returns the hosts of st.
func New(st *store.Store, cfg Config) *Hosts {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hosts{st: st, cfg: cfg, log: log, hvs: map[string]*libvirt.Hypervisor{}}
}

// Added is what Add found.
type Added struct {
	Host  store.Host
	Facts libvirt.Facts
	// Warnings are what works but costs: no KVM there.
	Warnings []string
}

// Add checks the host at url (SSH login with the agent or keys, host key
// in known_hosts, libvirt, QEMU, qemu-img, disk space) and records it as
// name. trust is a host-key fingerprint the person confirmed for a host
// not yet in known_hosts ("" for none). Nothing is recorded when a check
// fails.
func (h *Hosts) Add(ctx context.Context, name, url, dir, trust string) (Added, error) {
	if _, err := h.st.Host(ctx, name); err == nil {
		return Added{}, fmt.Errorf("a host named %s is already added: pick another name, or `sandbar hosts rm %s` first: %w", name, name, store.ErrExists)
	}
	t, err := libvirt.ParseTarget(url)
	if err != nil {
		return Added{}, err
	}
	hv := libvirt.New(libvirt.Config{Name: name, Target: t, Auth: h.cfg.Auth, Dir: dir, Owner: h.cfg.Owner, Logger: h.log})
	var f libvirt.Facts
	if trust != "" {
		f, err = hv.Trust(ctx, trust)
	} else {
		f, err = hv.Probe(ctx)
	}
	if err != nil {
		return Added{}, err
	}
	rec := store.Host{Name: name, URL: t.String(), Dir: dir, Checked: time.Now(), Status: "ready: " + f.Summary()}
	if err := h.st.AddHost(ctx, rec); err != nil {
		return Added{}, err
	}
	a := Added{Host: rec, Facts: f}
	if !f.KVM {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%s has no usable KVM: sessions there run under software emulation, about 10x slower; enable virtualization there (BIOS, nested virtualization, /dev/kvm for %s) to speed them up", name, t.User))
	}
	return a, nil
}

// Check checks a recorded host now and records what it found.
func (h *Hosts) Check(ctx context.Context, name string) (libvirt.Facts, error) {
	rec, err := h.st.Host(ctx, name)
	if err != nil {
		return libvirt.Facts{}, err
	}
	hv, err := h.backend(rec)
	if err != nil {
		return libvirt.Facts{}, err
	}
	f, err := hv.Probe(ctx)
	status := "ready: " + f.Summary()
	if err != nil {
		status = "unusable: " + err.Error()
	}
	if serr := h.st.SetHostStatus(ctx, name, status, time.Now()); serr != nil {
		return f, errors.Join(err, serr)
	}
	return f, err
}

// List is the recorded hosts.
func (h *Hosts) List(ctx context.Context) ([]store.Host, error) { return h.st.Hosts(ctx) }

// Remove forgets a host; refused while live sessions run there (the
// error names them).
func (h *Hosts) Remove(ctx context.Context, name string) error {
	if err := h.st.RemoveHost(ctx, name); err != nil {
		return err
	}
	h.mu.Lock()
	delete(h.hvs, name)
	h.mu.Unlock()
	return nil
}

// Hypervisor is the backend of the host of that name, made once.
func (h *Hosts) Hypervisor(ctx context.Context, name string) (vm.Hypervisor, error) {
	h.mu.Lock()
	hv, ok := h.hvs[name]
	h.mu.Unlock()
	if ok {
		return hv, nil
	}
	rec, err := h.st.Host(ctx, name)
	if err != nil {
		return nil, err
	}
	return h.backend(rec)
}

func (h *Hosts) backend(rec store.Host) (*libvirt.Hypervisor, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hv, ok := h.hvs[rec.Name]; ok {
		return hv, nil
	}
	t, err := libvirt.ParseTarget(rec.URL)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", rec.Name, err)
	}
	hv := libvirt.New(libvirt.Config{Name: rec.Name, Target: t, Auth: h.cfg.Auth, Dir: rec.Dir, Owner: h.cfg.Owner, Logger: h.log})
	h.hvs[rec.Name] = hv
	return hv, nil
}

// Leftover is something of Sandbar's on a host that no session of this
// data directory owns: a domain still running, or a VM's folder (its
// scratch disk) left by a session deleted for good.
type Leftover = libvirt.Leftover

// Prune lists what of Sandbar's is on the host and no session here
// (running, ended, or in the trash) owns, and, when remove is set,
// stops those domains and deletes those folders. Only this data
// directory's sessions are known: another Sandbar sharing the host's
// folder would see this one's as leftovers, so a host's folder is one
// data directory's (see --dir).
func (h *Hosts) Prune(ctx context.Context, name string, remove bool) ([]Leftover, error) {
	rec, err := h.st.Host(ctx, name)
	if err != nil {
		return nil, err
	}
	hv, err := h.backend(rec)
	if err != nil {
		return nil, err
	}
	all, err := hv.Leftovers(ctx)
	if err != nil {
		return nil, err
	}
	owned, err := h.st.SessionHosts(ctx)
	if err != nil {
		return nil, err
	}
	mine := map[string]bool{}
	for id, host := range owned {
		if host == name {
			mine["sandbar-"+id] = true
		}
	}
	var left []Leftover
	var names []string
	for _, l := range all {
		if !mine[l.Name] {
			left = append(left, l)
			names = append(names, l.Name)
		}
	}
	if !remove || len(names) == 0 {
		return left, nil
	}
	if _, err := hv.Prune(ctx, names); err != nil {
		return left, err
	}
	return left, nil
}
