package session

import (
	"context"
	"errors"
	"fmt"

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
