package session

import (
	"context"
)

// Budget is the memory Sandbar may give sessions, and what running ones
// use now.
type Budget struct {
	Host, Limit, Used uint64 // bytes
	Share             float64
}

// Free is what another session may still have.
func (b Budget) Free() uint64 {
	if b.Used >= b.Limit {
		return 0
	}
	return b.Limit - b.Used
}

// Budget reports this machine's memory budget: sessions on remote hosts
// count against theirs (budgetOn), not this one.
func (m *Manager) Budget(ctx context.Context) (Budget, error) {
	return m.budgetOn(ctx, place{CPUs: m.cfg.HostCPUs, Memory: m.cfg.HostMemory})
}

// HostCPUs is the machine's CPU count, for limits shown beside it.
func (m *Manager) HostCPUs() int { return m.cfg.HostCPUs }
