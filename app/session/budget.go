package session

import (
	"context"
	"fmt"

	"sandbar/app/store"
	"sandbar/vm"
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

// Budget reports the host memory budget.
func (m *Manager) Budget(ctx context.Context) (Budget, error) {
	share := DefaultBudget
	if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingMemoryBudget); ok {
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil && f > 0 && f <= 1 {
			share = f
		}
	}
	b := Budget{Host: m.cfg.HostMemory, Share: share, Limit: uint64(float64(m.cfg.HostMemory) * share)}
	live, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: store.LiveStates})
	if err != nil {
		return b, err
	}
	for _, s := range live {
		b.Used += uint64(s.Limits.MemoryMiB) * vm.MiB
	}
	return b, nil
}

// HostCPUs is the machine's CPU count, for limits shown beside it.
func (m *Manager) HostCPUs() int { return m.cfg.HostCPUs }
