package vm

import "context"

// Ballooner is a Machine with a memory balloon its owner drives: the
// guest's driver takes pages from the guest and hands them back to the
// host until the guest has Target bytes, and gives them back to the guest
// when the target rises. It is how a backend without free page reporting
// (Features.FreePageReporting) returns an idle guest's memory: vz's
// traditional balloon. A backend asserts it at compile time
// (var _ vm.Ballooner = (*machine)(nil)).
type Ballooner interface {
	// SetMemoryTarget asks the guest to hold target bytes (at most the
	// Spec's Memory, which lets the whole balloon go). It returns once
	// the hypervisor took the request, not once the guest met it.
	SetMemoryTarget(ctx context.Context, target uint64) error
}

// BalloonTarget is the memory a guest that uses used bytes of total is
// asked to keep while it waits: what it uses, with headroom of a quarter
// of it and at least 256 MiB for the page cache and whatever wakes it,
// never below MinMemory nor above total. The guest's driver gives back
// what it can; asking for less than the guest needs would make its
// kernel reclaim, or kill, the agent's processes.
func BalloonTarget(used, total uint64) uint64 {
	headroom := max(used/4, 256*MiB)
	t := max(used+headroom, MinMemory)
	return min(t, total)
}
