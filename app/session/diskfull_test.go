package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

// TestDiskFullPause: the hypervisor's pause on a full disk (the thin
// fake's vm.DiskPauser event; tests/ has the real QEMU on a full tmpfs)
// makes the session say so, exec is refused with those words at once,
// Resume (the person's button or verb) and free space (the floor) both
// run it again as it was, a stop while paused says the work was not
// saved, and a start under the floor is refused in words.
func TestDiskFullPause(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	floor := func(mib string) {
		t.Helper()
		if err := f.st.SetSetting(ctx, store.SettingDiskFloorMiB, mib); err != nil {
			t.Fatal(err)
		}
	}
	floor("1")
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo up; sleep 600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	f.waitState(t, s.ID, 10*time.Second, "working", func(s store.Session) bool { return s.Activity == ActivityWorking })
	m := f.hv.Booted()[0]
	if _, err := f.m.Resume(ctx, s.ID); !errors.Is(err, ErrState) {
		t.Errorf("Resume of a running session: %v, want ErrState", err)
	}

	floor("100000000") // no disk has that free: it resumes only when asked
	paused := func(what string) {
		t.Helper()
		m.PauseOnFullDisk()
		got := f.waitState(t, s.ID, 10*time.Second, what, func(s store.Session) bool { return s.Activity == ActivityPaused })
		if got.State != StateRunning || !strings.HasPrefix(got.Reason, "paused: the disk holding Sandbar's data is full (") || !strings.HasSuffix(got.Reason, " MB free)") {
			t.Errorf("%s: %s/%s %q", what, got.State, got.Activity, got.Reason)
		}
	}
	paused("the session says it paused on a full disk")
	_, err = f.m.Exec(ctx, s.ID, ExecRequest{Argv: []string{"true"}}, nil, nil)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), "sandbar resume") {
		t.Errorf("exec while paused: %v", err)
	}
	if _, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "true"}, MemoryMiB: 512}); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "disk_floor_mib") || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("a start under the floor: %v", err)
	}
	if _, err := f.m.Resume(ctx, s.ID); err != nil { // this disk has room, below the floor
		t.Fatalf("Resume: %v", err)
	}
	f.waitState(t, s.ID, 10*time.Second, "working again after Resume", func(s store.Session) bool { return s.Activity == ActivityWorking && s.Reason == "working" })
	if m.Paused() {
		t.Error("Resume left the machine paused")
	}

	paused("paused again")
	floor("1")
	f.waitState(t, s.ID, 10*time.Second, "working again once the floor is free", func(s store.Session) bool { return s.Activity == ActivityWorking })
	if m.Paused() {
		t.Error("room again, and the machine is still paused")
	}

	floor("100000000")
	paused("paused before the stop")
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := f.m.Stop(stopCtx, s.ID)
	if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), "is full") {
		t.Errorf("stop while paused: %v, want ErrNotSaved saying the disk is full", err)
	}
	if why, ok := NotSaved(got.Reason); got.State != StateStopped || !ok || !strings.HasPrefix(why, "the disk holding Sandbar's data is full") {
		t.Errorf("after a stop while paused: %s %q", got.State, got.Reason)
	}
}
