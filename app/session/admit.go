package session

import (
	"context"
	"fmt"

	"sandbar/app/store"
)

// admit is the one check a session passes before a VM is booted for it,
// on Start and on Restart alike: its CPUs and memory fit the machine it
// runs on (at), its budget beside the sessions that run there, the disk holding Sandbar's data has its floor free
// (DiskFloor), its agent's credentials are there, its network
// rules compose and, for Claude Code, let it reach its model API. It
// returns the agent's setup for the run. recorded says whether s is in
// the store yet (a restart) or is being created (a start, whose session
// directory holds its copy of the repository's rules).
func (m *Manager) admit(ctx context.Context, s store.Session, at place, agent AgentSpec, recorded bool) (*agentSetup, error) {
	if err := m.fitsOn(ctx, at, s.Limits.MemoryMiB, s.Limits.CPUs); err != nil {
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
