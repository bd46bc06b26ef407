package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sandbar/app/store"
	"sandbar/vm"
)

// RemoteHosts gives the backend of a remote host sessions can run on
// (start --on NAME), by the name the person gave it (app/hosts).
type RemoteHosts interface {
	Hypervisor(ctx context.Context, name string) (vm.Hypervisor, error)
}

// checkOn refuses a start --on a host there is none of, or with no
// remote hosts wired in.
func (m *Manager) checkOn(ctx context.Context, on string) error {
	if on == "" {
		return nil
	}
	if m.cfg.Hosts == nil {
		return fmt.Errorf("--on %s: this Sandbar runs sessions on this machine only: %w", on, ErrBadOptions)
	}
	if _, err := m.cfg.Store.Host(ctx, on); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("--on %s: no host of that name: `sandbar hosts` lists them, `sandbar hosts add %s ssh://user@host` adds it: %w", on, on, ErrBadOptions)
		}
		return err
	}
	return nil
}

// hypervisor is the backend the session's VM runs on: the remote host it
// was started on (a restart continues there), else this machine's.
func (r *run) hypervisor(ctx context.Context) (vm.Hypervisor, error) {
	on, err := r.m.cfg.Store.SessionHost(ctx, r.id)
	if err != nil {
		return nil, err
	}
	if on == "" {
		return r.m.cfg.Hypervisor, nil
	}
	if r.m.cfg.Hosts == nil {
		return nil, fmt.Errorf("the session runs on host %s, and this Sandbar runs sessions on this machine only", on)
	}
	hv, err := r.m.cfg.Hosts.Hypervisor(ctx, on)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", on, err)
	}
	return hv, nil
}

// reapWait bounds the look for one session's orphan VM on a remote host
// while the engine starts: a host that does not answer delays no more.
const reapWait = 20 * time.Second

// reaper is the backend that can find the VM a dead owner left for
// session id: its remote host's where it ran on one, else this
// machine's; nil where that backend has no OrphanReaper. where names it
// for the person ("this machine", or the host's name).
func (m *Manager) reaper(ctx context.Context, id string) (vm.OrphanReaper, string) {
	on, err := m.cfg.Store.SessionHost(ctx, id)
	if err != nil {
		m.log.Warn("which host the session ran on", "session", id, "err", err)
		return nil, ""
	}
	if on == "" {
		r, _ := m.cfg.Hypervisor.(vm.OrphanReaper)
		return r, "this machine"
	}
	if m.cfg.Hosts == nil {
		return nil, ""
	}
	hv, err := m.cfg.Hosts.Hypervisor(ctx, on)
	if err != nil {
		m.log.Warn("the host the session ran on", "session", id, "host", on, "err", err)
		return nil, ""
	}
	r, ok := hv.(vm.OrphanReaper)
	if !ok {
		return nil, ""
	}
	return boundedReaper{r}, "host " + on
}

// boundedReaper bounds a remote host's ReapOrphan by reapWait.
type boundedReaper struct{ vm.OrphanReaper }

func (b boundedReaper) ReapOrphan(ctx context.Context, vmDir string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reapWait)
	defer cancel()
	return b.OrphanReaper.ReapOrphan(ctx, vmDir)
}
