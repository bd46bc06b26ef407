package session

import (
	"time"
)

// Keeping the guest's clock. The guest's clock is set at boot and at the
// agent's start; after that it counts on its own, and its counter stops
// while the host sleeps (a suspended Mac, a suspended laptop), and nothing
// moves it when the host's clock is set. So the running session sends the
// guest the host's time now and then (clockSync), and at once when the
// host's wall clock moved otherwise than its monotonic clock between two
// readings (clockJump): the host slept, or its clock was set.
const (
	// defaultClockCheck is how often the host's clocks are read.
	defaultClockCheck = 5 * time.Second
	// clockSync is the longest the guest goes without being sent the
	// time, in the host's waking time.
	clockSync = time.Minute
	// clockJump is how far the wall clock may drift from the monotonic
	// one between two readings before it counts as a jump.
	clockJump = 2 * time.Second
)

// HostClock reads the host's wall clock and a monotonic clock that stops
// while the machine sleeps, as Go's does on Linux (CLOCK_MONOTONIC) and
// on macOS (mach_absolute_time).
type HostClock interface {
	Now() (wall time.Time, mono time.Duration)
}

// systemClock is the host's clock.
type systemClock struct{ origin time.Time }

func newSystemClock() systemClock { return systemClock{origin: time.Now()} }

// Now implements HostClock: the wall time without its monotonic reading,
// and the monotonic time since origin.
func (c systemClock) Now() (time.Time, time.Duration) {
	now := time.Now()
	return now.Round(0), now.Sub(c.origin)
}

// clockKeeper decides when the guest is sent the time.
type clockKeeper struct {
	clock    HostClock
	wall     time.Time     // at the last reading
	mono     time.Duration // at the last reading
	lastSent time.Duration // monotonic time of the last sending
}

// newClockKeeper starts keeping time from now, when the guest's clock has
// just been set.
func newClockKeeper(c HostClock) *clockKeeper {
	wall, mono := c.Now()
	return &clockKeeper{clock: c, wall: wall, mono: mono, lastSent: mono}
}

// tick reads the clocks and says whether to send the guest the time now:
// send is the time to send, and jump how far the wall clock moved beyond
// the monotonic one since the last reading when that is why (0 when it
// is only time to).
func (k *clockKeeper) tick() (send time.Time, jump time.Duration, ok bool) {
	wall, mono := k.clock.Now()
	jump = wall.Sub(k.wall) - (mono - k.mono)
	k.wall, k.mono = wall, mono
	if jump < clockJump && jump > -clockJump {
		jump = 0
		if mono-k.lastSent < clockSync {
			return time.Time{}, 0, false
		}
	}
	k.lastSent = mono
	return wall, jump, true
}

// keepClock sends the guest the time as k decides, until stop is closed.
// It runs beside supervise, so a guest slow to read cannot hold up a
// stop. k is made before the agent's start sets the guest's clock: a
// jump between that and this goroutine's first reading (the host slept
// just then) is seen, not taken as where the clock was.
func (r *run) keepClock(stop <-chan struct{}, k *clockKeeper) {
	t := time.NewTicker(r.m.cfg.ClockCheck)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now, jump, ok := k.tick()
		if !ok {
			continue
		}
		if jump != 0 {
			r.log.Info("the host's clock jumped (it slept, or was set): setting the guest's", "jump", jump.Round(time.Millisecond))
		}
		r.mu.Lock()
		sb := r.sb
		r.mu.Unlock()
		if sb == nil {
			continue
		}
		if err := sb.SetTime(now); err != nil {
			r.log.Debug("set the guest's clock", "err", err)
		}
	}
}
