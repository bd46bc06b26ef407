package session

import (
	"context"
	"fmt"

	"sandbar/app/store"
	"sandbar/vm"
)

// admit is the one check a session passes before a VM is booted for it,
// on Start and on Restart alike: its memory fits the budget beside the
// sessions that run, the disk holding Sandbar's data has its floor free
// (DiskFloor), its agent's credentials are there, its network
// rules compose and, for Claude Code, let it reach its model API. It
// returns the agent's setup for the run. recorded says whether s is in
// the store yet (a restart) or is being created (a start, whose session
// directory holds its copy of the repository's rules).
func (m *Manager) admit(ctx context.Context, s store.Session, agent AgentSpec, recorded bool) (*agentSetup, error) {
	if err := m.fits(ctx, s.Limits.MemoryMiB); err != nil {
		return nil, err
	}
	if err := m.checkDiskFloor(ctx); err != nil {
		return nil, err
	}
	if m.recoverLater.Load() {
		if err := m.Recover(ctx); err != nil {
			return nil, fmt.Errorf("recover the sessions of the last engine first: %w", err)
		}
	}
	m.keepReserve(ctx)
	setup, err := m.agentSetup(ctx, agent, s.ProjectID)
	if err != nil {
		return nil, err
	}
	p, _, err := m.composeWith(ctx, s, recorded)
	if err != nil {
		return nil, err
	}
	if agent.Claude() {
		if why := modelAPIBlocked(s.Limits, p, setup.upstream); why != "" {
			return nil, modelAPIError(s.Limits, why)
		}
	}
	return setup, nil
}

// fits refuses a session of memMiB beyond the memory budget.
func (m *Manager) fits(ctx context.Context, memMiB int) error {
	b, err := m.Budget(ctx)
	if err != nil {
		return err
	}
	if want := uint64(memMiB) * vm.MiB; b.Used+want > b.Limit {
		return fmt.Errorf("a session with %d MiB does not fit: running sessions use %d MiB of the %d MiB Sandbar may use (%.0f%% of %d MiB); %d MiB is free: ask for less memory or stop a session: %w",
			memMiB, b.Used/vm.MiB, b.Limit/vm.MiB, b.Share*100, b.Host/vm.MiB, b.Free()/vm.MiB, ErrBudget)
	}
	return nil
}
