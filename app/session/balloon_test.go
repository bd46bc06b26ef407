package session

import (
	"testing"

	"sandbar/vm"
)

// TestBalloonNext: a waiting guest is asked to keep what it uses plus
// headroom, a working one gets all its memory back at once, and small
// moves of its use ask nothing of it.
func TestBalloonNext(t *testing.T) {
	const total = 2048 * vm.MiB
	var b balloon
	steps := []struct {
		waiting    bool
		used       uint64
		want       uint64
		wantChange bool
	}{
		{false, 300 * vm.MiB, 0, false},            // working, never set: nothing to ask
		{true, 300 * vm.MiB, 556 * vm.MiB, true},   // waits: 300 + 256 headroom
		{true, 320 * vm.MiB, 0, false},             // +20 MiB: under the step
		{true, 100 * vm.MiB, 356 * vm.MiB, true},   // 200 MiB less: worth asking
		{true, 1200 * vm.MiB, 1500 * vm.MiB, true}, // grows past the step
		{true, 2000 * vm.MiB, total, true},         // capped at the limit
		{false, 2000 * vm.MiB, 0, false},           // already all of it
		{true, 10 * vm.MiB, vm.MinMemory + 10*vm.MiB, true},
		{false, 10 * vm.MiB, total, true}, // works again: everything back
	}
	for i, s := range steps {
		got, change := b.next(s.waiting, s.used, total)
		if change != s.wantChange || (change && got != s.want) {
			t.Fatalf("step %d (waiting %v, used %d MiB): got %d MiB change %v, want %d MiB change %v", i, s.waiting, s.used/vm.MiB, got/vm.MiB, change, s.want/vm.MiB, s.wantChange)
		}
		if change {
			b.target = got
		}
	}
	if _, change := b.next(true, 100*vm.MiB, 0); change {
		t.Error("a guest that said no total was sized")
	}
}

func TestBalloonTarget(t *testing.T) {
	for _, tt := range []struct{ used, total, want uint64 }{
		{0, 2048 * vm.MiB, 256 * vm.MiB},
		{2000 * vm.MiB, 2048 * vm.MiB, 2048 * vm.MiB},
		{1024 * vm.MiB, 4096 * vm.MiB, 1280 * vm.MiB},
		{100 * vm.MiB, 200 * vm.MiB, 200 * vm.MiB}, // never above the guest's size
	} {
		if got := vm.BalloonTarget(tt.used, tt.total); got != tt.want {
			t.Errorf("BalloonTarget(%d MiB, %d MiB) = %d MiB, want %d MiB", tt.used/vm.MiB, tt.total/vm.MiB, got/vm.MiB, tt.want/vm.MiB)
		}
	}
}
