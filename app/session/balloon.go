package session

import (
	"context"
	"time"

	"sandbar/vm"
)

// balloonStep is the least change of a balloon's target worth asking the
// guest for: the guest's use moves by a few MiB between two stats.
const balloonStep = 64 * vm.MiB

// balloon drives the memory balloon of a VM whose backend has no free
// page reporting (vz): while the session waits for the person, its guest
// is asked to keep what it uses plus headroom (vm.BalloonTarget) and the
// rest goes back to the host; once it works again it gets all of its
// memory back. Under QEMU the guest reports what it frees by itself
// (vm.Features.FreePageReporting) and the balloon is left alone.
type balloon struct {
	target uint64 // 0: never set, the guest has all its memory
}

// next is the target to ask for, given what the session does and the
// guest's latest use, and whether it differs enough from the last one.
// The guest's figures are its word: a guest that lies only makes its own
// memory smaller or larger, within MinMemory and its limit.
func (b *balloon) next(waiting bool, used, total uint64) (uint64, bool) {
	if total == 0 {
		return 0, false
	}
	want := total
	if waiting && used > 0 {
		want = vm.BalloonTarget(used, total)
	}
	cur := b.target
	if cur == 0 {
		cur = total
	}
	diff := max(want, cur) - min(want, cur)
	if diff == 0 || (diff < balloonStep && want != total) {
		// The headroom covers a small move; all of its memory back is
		// never held up by the step.
		return 0, false
	}
	return want, true
}

// adjustBalloon applies next to the session's VM when it is a Ballooner
// without free page reporting.
func (r *run) adjustBalloon(waiting bool, used, total uint64) {
	if r.m.cfg.Hypervisor.Info().Features.FreePageReporting {
		return
	}
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return
	}
	bm, ok := sb.Machine.(vm.Ballooner)
	if !ok {
		return
	}
	r.balloonMu.Lock()
	defer r.balloonMu.Unlock()
	target, change := r.balloon.next(waiting, used, total)
	if !change {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bm.SetMemoryTarget(ctx, target); err != nil {
		r.log.Warn("memory balloon", "target_mib", target/vm.MiB, "err", err)
		return
	}
	r.balloon.target = target
	r.log.Debug("memory balloon", "target_mib", target/vm.MiB, "waiting", waiting)
}
