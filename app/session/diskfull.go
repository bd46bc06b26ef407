package session

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"sandbar/app/store"
	"sandbar/vm"
)

// A full disk. The hypervisor pauses a session's VM when a write to its
// scratch disk finds the disk holding Sandbar's data full (vm.DiskPauser);
// the session then says so ("paused: the disk holding Sandbar's data is
// full (N MB free)"), and runs on once there is room again: by itself,
// once DiskFloor is free, or when the person resumes it (Resume).

// ActivityPaused: the hypervisor paused the session's VM because the disk
// holding Sandbar's data is full; the reason says how much is free.
const ActivityPaused = "paused"

// DefaultDiskFloorMiB is the free space, in MiB, the disk holding
// Sandbar's data must have for a session to start, and for a session
// paused on a full disk to resume by itself; store.SettingDiskFloorMiB
// changes it.
const DefaultDiskFloorMiB = 1024

// diskPoll is how often a paused session looks for room again.
const diskPoll = 2 * time.Second

// ErrDiskFull is the disk holding Sandbar's data being full (or under
// the floor a start needs), checked with errors.Is: the store's own, so
// that a write the database refused says the same.
var ErrDiskFull = store.ErrDiskFull

// diskReserve is the size of the file Sandbar keeps in its data
// directory (config.Paths.Reserve) and gives up when the disk is full,
// so the store can still record why sessions paused.
const diskReserve = 16 << 20

// DiskFloor is the free space (bytes) a start needs and a paused session
// resumes at.
func (m *Manager) DiskFloor(ctx context.Context) uint64 {
	mib := uint64(DefaultDiskFloorMiB)
	if v, ok, _ := m.cfg.Store.Setting(ctx, store.SettingDiskFloorMiB); ok {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			mib = n
		}
	}
	return mib << 20
}

// freeSpace is the space an unprivileged writer may still use on the
// file system holding path.
func freeSpace(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", path, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// megabytes says n bytes in whole MB (10^6), the unit a file manager shows.
func megabytes(n uint64) string { return strconv.FormatUint(n/1e6, 10) + " MB" }

// pausedReason is a paused session's reason.
func pausedReason(free uint64) string {
	return "paused: the disk holding Sandbar's data is full (" + megabytes(free) + " free)"
}

// checkDiskFloor refuses a start (or restart) when the disk holding the
// data directory has less than the floor free.
func (m *Manager) checkDiskFloor(ctx context.Context) error {
	floor := m.DiskFloor(ctx)
	free, err := freeSpace(m.cfg.Paths.Home)
	if err != nil {
		m.log.Warn("free space unknown; starting anyway", "err", err)
		return nil
	}
	if free < floor {
		return fmt.Errorf("%w: the disk holding Sandbar's data (%s) has %s free, and a session needs at least %s (%s = %d MiB): free some space, then start again",
			ErrDiskFull, m.cfg.Paths.Home, megabytes(free), megabytes(floor), store.SettingDiskFloorMiB, floor>>20)
	}
	return nil
}

// keepReserve makes the reserve file when there is room for it twice
// over; releaseReserve removes it so the store can write on a full disk.
func (m *Manager) keepReserve(ctx context.Context) {
	path := m.cfg.Paths.Reserve()
	if fi, err := os.Stat(path); err == nil && fi.Size() == diskReserve {
		return
	}
	if free, err := freeSpace(m.cfg.Paths.Home); err != nil || free < 2*diskReserve {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		m.log.Warn("disk reserve", "err", err)
		return
	}
	// Written, not truncated: a sparse file would hold no space.
	buf := make([]byte, 1<<20)
	for i := 0; i < diskReserve/len(buf) && err == nil; i++ {
		_, err = f.Write(buf)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		m.log.Warn("disk reserve", "err", err)
	}
}

func (m *Manager) releaseReserve() {
	if err := os.Remove(m.cfg.Paths.Reserve()); err == nil {
		m.log.Warn("the disk holding Sandbar's data is full: released its reserve so the database can record it")
	}
}

// diskPause is a run's pause on a full disk: while paused, the activity
// and reason it had before, restored on resume.
type diskPause struct {
	activity, reason string
	free             uint64
	// recorded: the store has the pause (a write on a full disk can fail
	// even with the reserve given up; it is tried again at each look).
	recorded bool
}

// paused reports whether the run's VM is paused on a disk error, and why,
// in words.
func (r *run) paused() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pause == nil {
		return "", false
	}
	return pausedReason(r.pause.free), true
}

// watchDisk follows the hypervisor's pauses on a full disk (when it
// reports them): it records and announces each, looks for room every
// diskPoll while paused, and resumes the VM once the floor is free.
func (r *run) watchDisk(stop <-chan struct{}) {
	p, ok := r.sb.Machine.(vm.DiskPauser)
	if !ok {
		return
	}
	events := p.DiskEvents()
	tick := time.NewTicker(diskPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Paused {
				r.diskPaused(ev)
			} else {
				r.diskResumed()
			}
		case <-tick.C:
			r.lookForRoom(p)
		}
	}
}

// diskPaused records a pause. Its time is when the hypervisor paused the
// VM, for the delay until the store has it (the disk-pause timing).
func (r *run) diskPaused(ev vm.DiskEvent) {
	r.m.releaseReserve()
	free, _ := freeSpace(r.m.cfg.Paths.Home)
	r.mu.Lock()
	first := r.pause == nil
	if first {
		r.pause = &diskPause{activity: r.activity, reason: r.reason}
	}
	r.pause.free = free
	r.activity = ActivityPaused
	r.mu.Unlock()
	why := pausedReason(free)
	if !ev.NoSpace {
		why = "paused: a write to the session's disk failed (" + megabytes(free) + " free on the disk holding Sandbar's data)"
	}
	if first {
		r.log.Warn("the VM paused on a disk error", "disk", ev.Disk, "nospace", ev.NoSpace, "free", free)
		r.systemLine(why + ": it resumes by itself once " + megabytes(r.m.DiskFloor(r.ctx)) + " are free, or press Resume (sandbar resume " + short(r.id) + ")")
	}
	r.recordPause(why)
	if first {
		r.timing(r.ctx, "disk-pause", time.Since(ev.Time))
	}
}

// recordPause writes the pause's reason to the store; where even that
// finds no room, the windows and the tray hear it all the same, and the
// next look tries again.
func (r *run) recordPause(why string) {
	_, err := r.m.setState(r.ctx, r.id, StateRunning, ActivityPaused, why, nil)
	r.mu.Lock()
	if r.pause != nil {
		r.pause.recorded = err == nil
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("record the pause", "err", err)
		r.m.publishState(store.Session{ID: r.id, State: StateRunning, Activity: ActivityPaused, Reason: why})
	}
}

// resumeRoom is the least free space a VM paused on a full disk is
// resumed with: the store's reserve, twice over.
const resumeRoom = 2 * diskReserve

// lookForRoom resumes a paused VM once the floor is free; until then it
// keeps the free space the session says up to date.
func (r *run) lookForRoom(p vm.DiskPauser) {
	r.mu.Lock()
	pause := r.pause
	var said uint64
	var recorded bool
	if pause != nil {
		said, recorded = pause.free, pause.recorded
	}
	r.mu.Unlock()
	if pause == nil {
		return
	}
	free, err := freeSpace(r.m.cfg.Paths.Home)
	if err != nil {
		r.log.Warn("free space", "err", err)
		return
	}
	if free < max(r.m.DiskFloor(r.ctx), resumeRoom) {
		if !recorded || megabytes(free) != megabytes(said) {
			r.mu.Lock()
			pause.free = free
			r.mu.Unlock()
			r.recordPause(pausedReason(free))
		}
		return
	}
	if err := r.resume(p, free); err != nil {
		r.log.Warn("resume the VM", "err", err)
	}
}

// resume runs the VM again, the store's reserve made first so that the
// next pause can be recorded too.
func (r *run) resume(p vm.DiskPauser, free uint64) error {
	r.m.keepReserve(r.ctx)
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	if err := p.Resume(ctx); err != nil {
		return err
	}
	// The run is resumed now, not when the hypervisor's event comes: a
	// stop right after Resume must find it running, and save (the event
	// then finds nothing paused).
	r.diskResumed()
	r.systemLine(fmt.Sprintf("resumed the VM: %s free on the disk holding Sandbar's data", megabytes(free)))
	return nil
}

// diskResumed puts back the activity the session had before its pause.
func (r *run) diskResumed() {
	r.mu.Lock()
	pause := r.pause
	r.pause = nil
	if pause != nil {
		r.activity = pause.activity
	}
	r.mu.Unlock()
	if pause == nil {
		return
	}
	activity, reason := pause.activity, pause.reason
	if activity == "" {
		activity, reason = ActivityWorking, "working"
	}
	r.m.setState(r.ctx, r.id, StateRunning, activity, reason, nil)
}

// Resume runs a session paused on a full disk again now, below the floor
// it resumes at by itself, but not on a disk with less than resumeRoom
// free: what the VM then wrote would leave no room to record its next
// pause. Where the disk is still short, the VM pauses again at its next
// write that finds no room.
func (m *Manager) Resume(ctx context.Context, ref string) (store.Session, error) {
	if s, err := m.findIntact(ctx, ref); err != nil {
		return s, err
	} else if s.State == StateSuspended {
		return m.resumeSuspended(ctx, s)
	}
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return s, err
	}
	p, ok := r.machine().(vm.DiskPauser)
	if _, paused := r.paused(); !paused || !ok {
		return s, fmt.Errorf("session %s is not paused: %w", s.ID, ErrState)
	}
	free, err := freeSpace(m.cfg.Paths.Home)
	if err != nil {
		return s, err
	}
	if free < resumeRoom {
		return s, fmt.Errorf("%w: the disk holding Sandbar's data (%s) is still full (%s free): free at least %s, then resume; it resumes by itself once %s are free",
			ErrDiskFull, m.cfg.Paths.Home, megabytes(free), megabytes(resumeRoom), megabytes(max(m.DiskFloor(ctx), resumeRoom)))
	}
	if err := r.resume(p, free); err != nil {
		return s, fmt.Errorf("resume session %s: %w", s.ID, err)
	}
	return s, nil
}

// machine is the run's VM, nil before its boot.
func (r *run) machine() vm.Machine {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sb == nil {
		return nil
	}
	return r.sb.Machine
}

// pausedErr is why the VM cannot do anything now, nil unless it is
// paused on a full disk: what the guest is asked meanwhile would wait
// without an answer.
func (r *run) pausedErr() error {
	why, paused := r.paused()
	if !paused {
		return nil
	}
	return fmt.Errorf("session %s is %s: free some space and it resumes by itself, or resume it with `sandbar resume %s`: %w", short(r.id), why, short(r.id), ErrDiskFull)
}
