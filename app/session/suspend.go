package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/guest/image"
	"sandbar/vm"
)

// suspendTimeout bounds the save of one VM's state.
const suspendTimeout = 5 * time.Minute

// ReasonSuspended is the reason of a suspended session.
const ReasonSuspended = "suspended: its VM's memory is saved in its directory; `sandbar resume`, opening it or a message brings it back where it was"

// Suspend saves a running session's VM, memory and devices, to its
// directory and ends the VM: the session is StateSuspended, holds no
// memory and no CPU, and survives the engine's end and the host's
// restart. Resume brings it back with the agent's processes where they
// were. A VM that cannot be saved runs on, and the error says why.
func (m *Manager) Suspend(ctx context.Context, ref string) (store.Session, error) {
	return m.suspendAs(ctx, ref, ReasonSuspended)
}

// suspendAsk is a request to supervise to save the VM: the session is
// recorded suspended with reason, which says why and what brings it back
// (keep.go tells its own apart by it).
type suspendAsk struct {
	reason string
	reply  chan error
}

// suspendAs suspends the session, recording reason.
func (m *Manager) suspendAs(ctx context.Context, ref, reason string) (store.Session, error) {
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return s, err
	}
	if err := r.canSuspend(); err != nil {
		return s, err
	}
	ask := suspendAsk{reason: reason, reply: make(chan error, 1)}
	select {
	case r.suspendReq <- ask:
	case <-r.done:
		return s, fmt.Errorf("session %s ended before it could be suspended: %w", s.ID, ErrState)
	case <-ctx.Done():
		return s, ctx.Err()
	}
	select {
	case err = <-ask.reply:
	case <-ctx.Done():
		return s, ctx.Err()
	}
	if err != nil {
		return s, fmt.Errorf("suspend session %s: %w", s.ID, err)
	}
	return m.cfg.Store.Session(context.WithoutCancel(ctx), s.ID)
}

// suspendAllAs suspends every session this engine runs with reason, one
// after another (each save is a burst of disk writes), and returns the
// ids of those it suspended; those that could not be are left running
// (Quit then stops them as before).
func (m *Manager) suspendAllAs(ctx context.Context, reason string) []string {
	var done []string
	for _, id := range m.Running() {
		if _, err := m.suspendAs(ctx, id, reason); err != nil {
			m.log.Warn("suspend", "session", id, "why", reason, "err", err)
			continue
		}
		done = append(done, id)
	}
	return done
}

// canSuspend says why the run's VM cannot be saved now, nil when it can.
func (r *run) canSuspend() error {
	r.mu.Lock()
	sb, started := r.sb, r.started
	r.mu.Unlock()
	switch {
	case sb == nil || !started:
		return fmt.Errorf("session %s is still starting: suspend it once its agent runs: %w", r.id, ErrState)
	case r.pausedErr() != nil:
		return fmt.Errorf("session %s is paused on a full disk: free some space first: %w", r.id, ErrState)
	}
	if _, ok := sb.Machine.(vm.Suspender); !ok {
		return fmt.Errorf("the %s backend cannot save a running VM: %w", r.m.cfg.Hypervisor.Name(), ErrState)
	}
	return nil
}

// suspend saves the VM (supervise's answer to a suspend request); on
// success the VM has ended and the session is to be recorded suspended.
func (r *run) suspend() error {
	if err := r.canSuspend(); err != nil {
		return err
	}
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	r.systemLine("suspending: saving the VM's memory and devices to the session's directory")
	ctx, cancel := context.WithTimeout(context.Background(), suspendTimeout)
	defer cancel()
	start := time.Now()
	// The guest's unwritten file data would live only in the state: a
	// state that cannot be loaded later would take the last commits
	// with it. Written to the session's disk first, a fallback to a
	// cold boot loses nothing.
	if res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{Argv: []string{"sync"}, User: sandbox.UserRoot}, nil, nil); err != nil || res.Code != 0 {
		r.log.Warn("sync before suspend", "err", err, "code", res.Code)
	}
	if err := sb.Suspend(ctx, r.dir.VMState()); err != nil {
		r.systemLine("suspend failed, the session runs on: " + err.Error())
		return err
	}
	took := time.Since(start)
	r.timing(context.Background(), "suspend", took)
	r.mu.Lock()
	ports := r.ports
	r.mu.Unlock()
	if b, err := json.Marshal(ports); err == nil {
		os.WriteFile(r.dir.VMPorts(), b, 0o600)
	}
	size := ""
	if fi, err := os.Stat(r.dir.VMState()); err == nil {
		size = fmt.Sprintf(", %d MiB", fi.Size()>>20)
	}
	r.systemLine(fmt.Sprintf("suspended in %s%s", took.Round(time.Millisecond), size))
	return nil
}

// finishSuspended records the session suspended with reason, keeping its
// activity (what it did when saved is what it does when resumed).
func (r *run) finishSuspended(ctx context.Context, reason string) error {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	r.mu.Lock()
	activity := r.activity
	r.mu.Unlock()
	r.sink.flush()
	_, err := r.m.setState(ctx, r.id, StateSuspended, activity, reason, nil)
	return err
}

// resumeSuspended starts a run that resumes suspended session s from its
// saved state (see run.resumeVM).
func (m *Manager) resumeSuspended(ctx context.Context, s store.Session) (store.Session, error) {
	release, err := m.reserveStart(s.ID)
	if err != nil {
		return s, err
	}
	defer release()
	if s, err = m.cfg.Store.Session(ctx, s.ID); err != nil {
		return s, err
	}
	if s.State != StateSuspended || m.running(s.ID) != nil {
		return s, fmt.Errorf("session %s is %s, not suspended: %w", s.ID, s.State, ErrState)
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return s, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return s, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	at, err := m.placeOfSession(ctx, s.ID)
	if err != nil {
		return s, err
	}
	setup, err := m.admit(ctx, s, at, specOf(s.Agent), true)
	if err != nil {
		return s, err
	}
	envCfg, feats, err := keptEnvironment(m.cfg.Paths.SessionDir(s.ID).Environment())
	if err != nil {
		return s, err
	}
	activity := s.Activity
	s, err = m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error {
		x.State, x.Activity, x.Reason = StateBooting, "", "resuming"
		x.Owner, x.ExitCode, x.Error = m.owner, nil, ""
		return nil
	})
	if err != nil {
		return s, err
	}
	m.publishState(s)
	r := m.newRun(s, repo, setup, false)
	r.resumeFrom, r.resumeActivity = m.cfg.Paths.SessionDir(s.ID).VMState(), activity
	r.useEnvironment(envCfg, feats)
	m.launch(r, func(ctx context.Context) error { return r.bootAndRun(ctx) })
	return s, nil
}

// resumeVM loads the session's saved VM. The state file is deleted once
// the guest runs from it: the guest's disks move on from then, and the
// same state loaded again would find them changed under it.
func (r *run) resumeVM(ctx context.Context, hv vm.Hypervisor, img *image.Image, opts sandbox.Options) (*sandbox.Sandbox, error) {
	r.systemLine("resuming from the saved VM state")
	sb, err := sandbox.Resume(ctx, hv, img, opts, r.resumeFrom)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(r.resumeFrom); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn("remove the loaded VM state", "err", err)
	}
	return sb, nil
}

// republishPorts publishes again the ports the guest listened on when it
// was saved: it reports only changes, and its servers run on. The file
// is Sandbar's own, written at the suspend from what the guest reported
// then (already checked against protocol.MaxPorts); it is read with a
// bound all the same.
func (r *run) republishPorts() {
	path := r.dir.VMPorts()
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var ports []sandbox.Port
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&ports); err != nil {
		r.log.Warn("the suspended guest's ports", "err", err)
		return
	}
	r.mu.Lock()
	sn := r.net
	if r.ports == nil { // nothing newer came from the guest meanwhile
		r.ports = ports
	} else {
		sn = nil
	}
	r.mu.Unlock()
	if sn != nil && len(ports) > 0 {
		sn.guestPorts(ports)
	}
}

// resumeFailed ends a resume whose state could not be loaded. A state
// that is missing or that QEMU refused is gone for good: the session is
// interrupted, its disks intact, and a restart boots it again. Any other
// failure (QEMU not there, the engine quitting) keeps the state for the
// next try.
func (r *run) resumeFailed(ctx context.Context, err error) error {
	if errors.Is(err, vm.ErrBadState) {
		os.Remove(r.resumeFrom)
		return r.finish(ctx, StateInterrupted, "its saved VM state could not be restored ("+err.Error()+"): its workspace and disk are intact; `sandbar restart "+short(r.id)+"` boots it again and starts its agent anew", nil)
	}
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	r.systemLine("resume failed: " + err.Error())
	r.sink.flush()
	_, serr := r.m.setState(ctx, r.id, StateSuspended, r.resumeActivity, "resume failed ("+err.Error()+"); its saved state is kept: try `sandbar resume "+short(r.id)+"` again", nil)
	return serr
}

// resumed takes up a resumed guest: its agent runs already, doing what
// it did when it was saved.
func (r *run) resumed(ctx context.Context) {
	r.mu.Lock()
	r.started = true
	r.mu.Unlock()
	r.republishPorts()
	activity := r.resumeActivity
	reason := "working"
	if activity == "" || activity == ActivityWaiting {
		activity, reason = ActivityWaiting, "waiting for your message"
	}
	r.setActivity(ctx, activity, reason)
}

// ensureResumed resumes a suspended session and waits until its agent
// runs again, for a verb that needs it (a chat message); a session in
// any other state is left alone.
func (m *Manager) ensureResumed(ctx context.Context, ref string) error {
	s, err := m.findIntact(ctx, ref)
	if err != nil || s.State != StateSuspended {
		return err
	}
	if _, err := m.resumeSuspended(ctx, s); err != nil {
		return err
	}
	for {
		r := m.running(s.ID)
		if r == nil {
			s, _ = m.cfg.Store.Session(ctx, s.ID)
			return fmt.Errorf("session %s did not resume: %s: %w", s.ID, s.Reason, ErrState)
		}
		r.mu.Lock()
		up := r.started && r.sb != nil
		r.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
