package session

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sandbar/app/store"
	"sandbar/vm"
)

// OnAuto is start --on's word for "the machine with the most free memory
// that fits the session": this one or a registered host.
const OnAuto = "auto"

// place is a machine a session's VM runs on, and what it has for it.
type place struct {
	// On is the host's name; "" for this machine.
	On   string
	CPUs int
	// Memory is the machine's; FreeMemory its free memory now, as its
	// hypervisor reports it where reported (a remote host's; this
	// machine's budget is its bound).
	Memory, FreeMemory uint64
	reported           bool
}

// name is the place in words for a person.
func (p place) name() string {
	if p.On == "" {
		return "this machine"
	}
	return "host " + p.On
}

// placeOf is the machine on names ("" for this one) with what it has: a
// remote host is asked now (vm.HostReporter). A backend that does not
// report runs its guests here, and is given this machine's figures.
func (m *Manager) placeOf(ctx context.Context, on string) (place, error) {
	here := place{On: on, CPUs: m.cfg.HostCPUs, Memory: m.cfg.HostMemory}
	if on == "" {
		return here, nil
	}
	if err := m.checkOn(ctx, on); err != nil {
		return place{}, err
	}
	hv, err := m.cfg.Hosts.Hypervisor(ctx, on)
	if err != nil {
		return place{}, fmt.Errorf("host %s: %w", on, err)
	}
	r, ok := hv.(vm.HostReporter)
	if !ok {
		return here, nil
	}
	res, err := r.HostResources(ctx)
	if err != nil {
		return place{}, fmt.Errorf("host %s could not be checked for room: %w: `sandbar hosts check %s` says more; or start it elsewhere (--on)", on, err, on)
	}
	return place{On: on, CPUs: res.CPUs, Memory: res.Memory, FreeMemory: res.FreeMemory, reported: true}, nil
}

// placeOfSession is where a recorded session runs: where it started,
// which a restart or a resume goes to again.
func (m *Manager) placeOfSession(ctx context.Context, id string) (place, error) {
	on, err := m.cfg.Store.SessionHost(ctx, id)
	if err != nil {
		return place{}, err
	}
	return m.placeOf(ctx, on)
}

// budgetOn is the memory budget of place p: its share of p's memory, and
// what live sessions there use.
func (m *Manager) budgetOn(ctx context.Context, p place) (Budget, error) {
	share := DefaultBudget
	if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingMemoryBudget); ok {
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil && f > 0 && f <= 1 {
			share = f
		}
	}
	b := Budget{Host: p.Memory, Share: share, Limit: uint64(float64(p.Memory) * share)}
	live, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: store.LiveStates})
	if err != nil {
		return b, err
	}
	where, err := m.cfg.Store.SessionHosts(ctx)
	if err != nil {
		return b, err
	}
	for _, s := range live {
		if where[s.ID] == p.On {
			b.Used += uint64(s.Limits.MemoryMiB) * vm.MiB
		}
	}
	return b, nil
}

// fitsOn refuses a session of memMiB and cpus beyond what place p has:
// its cores, its memory budget, and (a remote host) its free memory now.
// The error names the place.
func (m *Manager) fitsOn(ctx context.Context, p place, memMiB, cpus int) error {
	if cpus > p.CPUs {
		return fmt.Errorf("a session with %d vCPUs does not fit on %s, which has %d: ask for fewer (--cpus), or start it elsewhere (--on): %w", cpus, p.name(), p.CPUs, ErrBadOptions)
	}
	b, err := m.budgetOn(ctx, p)
	if err != nil {
		return err
	}
	want := uint64(memMiB) * vm.MiB
	if b.Used+want > b.Limit {
		return fmt.Errorf("a session with %d MiB does not fit on %s: running sessions there use %d MiB of the %d MiB Sandbar may use (%.0f%% of %d MiB); %d MiB is free: ask for less memory, stop a session there, or start it elsewhere (--on): %w",
			memMiB, p.name(), b.Used/vm.MiB, b.Limit/vm.MiB, b.Share*100, b.Host/vm.MiB, b.Free()/vm.MiB, ErrBudget)
	}
	if p.reported && want > p.FreeMemory {
		return fmt.Errorf("a session with %d MiB does not fit on %s: it has %d MiB free now (of %d MiB): ask for less memory, or start it elsewhere (--on): %w",
			memMiB, p.name(), p.FreeMemory/vm.MiB, p.Memory/vm.MiB, ErrBudget)
	}
	return nil
}

// room is what a session may still have on place p: its budget's free
// memory, and no more than the host has free now.
func (m *Manager) room(ctx context.Context, p place) (uint64, error) {
	b, err := m.budgetOn(ctx, p)
	if err != nil {
		return 0, err
	}
	free := b.Free()
	if p.reported {
		free = min(free, p.FreeMemory)
	}
	return free, nil
}

// pickPlace is --on auto: of this machine and every registered host, the
// one with the most room (room) that fits a session of memMiB and cpus.
// why says, for the session's log, which and why; a start that fits
// nowhere is refused naming each place and what it lacks.
func (m *Manager) pickPlace(ctx context.Context, memMiB, cpus int) (p place, why string, err error) {
	hosts, err := m.cfg.Store.Hosts(ctx)
	if err != nil {
		return place{}, "", err
	}
	names := []string{""}
	if m.cfg.Hosts != nil {
		for _, h := range hosts {
			names = append(names, h.Name)
		}
	}
	type cand struct {
		p    place
		room uint64
	}
	var fit []cand
	var refused []string
	for _, on := range names {
		pl, err := m.placeOf(ctx, on)
		if err == nil {
			err = m.fitsOn(ctx, pl, memMiB, cpus)
		}
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		r, err := m.room(ctx, pl)
		if err != nil {
			return place{}, "", err
		}
		fit = append(fit, cand{pl, r})
	}
	if len(fit) == 0 {
		return place{}, "", fmt.Errorf("--on auto: no machine fits a session with %d MiB and %d vCPUs (%s): %w", memMiB, cpus, strings.Join(refused, "; "), ErrBudget)
	}
	// The most room first; at a tie this machine, then hosts by name.
	sort.SliceStable(fit, func(i, j int) bool { return fit[i].room > fit[j].room })
	var others []string
	for _, c := range fit[1:] {
		others = append(others, fmt.Sprintf("%s %d MiB", c.p.name(), c.room/vm.MiB))
	}
	why = fmt.Sprintf("--on auto: running on %s, which has the most free memory for sessions (%d MiB)", fit[0].p.name(), fit[0].room/vm.MiB)
	if len(others) > 0 {
		why += "; " + strings.Join(others, ", ")
	}
	if len(refused) > 0 {
		why += "; does not fit: " + strings.Join(refused, "; ")
	}
	return fit[0].p, why, nil
}
