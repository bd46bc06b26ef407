package session

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a host clock the test moves: wall and monotonic apart.
type fakeClock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{wall: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC), mono: time.Hour}
}

func (c *fakeClock) Now() (time.Time, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall, c.mono
}

// advance moves the wall clock by wall and the monotonic one by mono: a
// host that slept for wall-mono moves them apart.
func (c *fakeClock) advance(wall, mono time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall, c.mono = c.wall.Add(wall), c.mono+mono
	return c.wall
}

func TestClockKeeper(t *testing.T) {
	c := newFakeClock()
	k := newClockKeeper(c)
	steps := []struct {
		name       string
		wall, mono time.Duration
		send       bool
		jump       time.Duration
	}{
		{"awake, 5 s on", 5 * time.Second, 5 * time.Second, false, 0},
		{"a second of drift is no jump", 6 * time.Second, 5 * time.Second, false, 0},
		{"the Mac slept 2 min", 2*time.Minute + 5*time.Second, 5 * time.Second, true, 2 * time.Minute},
		{"awake again", 5 * time.Second, 5 * time.Second, false, 0},
		{"the clock was set back", -time.Hour + 5*time.Second, 5 * time.Second, true, -time.Hour},
		{"awake 50 s", 50 * time.Second, 50 * time.Second, false, 0},
		// A minute of waking time since the last sending: send anyway.
		{"awake 10 s more", 10 * time.Second, 10 * time.Second, true, 0},
		{"and then not", 5 * time.Second, 5 * time.Second, false, 0},
	}
	for _, s := range steps {
		want := c.advance(s.wall, s.mono)
		got, jump, ok := k.tick()
		if ok != s.send || jump != s.jump || ok && !got.Equal(want) {
			t.Errorf("%s: tick() = %v, %v, %v; want %v, %v, %v", s.name, got, jump, ok, want, s.jump, s.send)
		}
	}
}

// A running session sends the guest (the real supervisor, in-process) the
// host's time when the host's clock jumps, and again a minute later.
func TestSessionKeepsGuestClock(t *testing.T) {
	clk := newFakeClock()
	f := newFixtureWith(t, func(c *Config) { c.Clock, c.ClockCheck = clk, 5*time.Millisecond })
	s, err := f.m.Start(context.Background(), Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	booted := f.hv.Booted()
	if len(booted) != 1 {
		t.Fatalf("%d machines booted", len(booted))
	}
	m := booted[0]
	set, _ := m.Clock()
	if now, _ := clk.Now(); len(set) == 0 || !set[len(set)-1].Equal(now) {
		t.Fatalf("the guest's clock was set to %v at the agent's start, want the host's %v", set, now)
	}
	// waitSet waits for the guest's clock to be set to want.
	waitSet := func(what string, want time.Time) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			set, next := m.Clock()
			if n := len(set); n > 0 && set[n-1].Equal(want) {
				return
			}
			select {
			case <-next:
			case <-deadline:
				t.Fatalf("%s: the guest's clock was not set to %v (settings: %v)", what, want, set)
			}
		}
	}
	waitSet("after the host slept 2 min", clk.advance(2*time.Minute, time.Second))
	waitSet("a minute later", clk.advance(time.Minute, time.Minute))
}
