// Package session is the orchestrator: the Manager owns every session's
// life, from its workspace (a base disk built from Sandbar's repository
// of the project, see workspace.go) through the VM boot and the agent's
// run to saving its work, stop, merge back and removal. It calls the
// other parts through small interfaces (store, workspace, secrets, a
// vm.Hypervisor through app/sandbox) and publishes what happens to
// subscribers: the tray, the windows and the CLI.
//
// Each verb is a file (start.go, stop.go, restart.go, remove.go,
// merge.go, ...); Start and Restart share one admission check (admit.go).
// A session's run here is a state machine (run.go) beside its log sink
// (logsink.go) and the dispatch of its guest's events (guestevents.go).
// What a session keeps on disk is named by config.SessionDir and read
// back by Inspect.
//
// A session's VM belongs to the process that booted it (its Owner in the
// store). Other processes see such a session as owned elsewhere and reach
// it through that process (the engine, app/engine).
//
// It is not the VM (app/sandbox and vm boot and speak to it), not the
// record (app/store keeps what the Manager tells it), not git
// (app/workspace), and not a UI: it prints nothing and reads no
// environment, taking everything through Config.
package session

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandbar/app/config"
	"sandbar/app/net/broker"
	"sandbar/app/net/hostproxy"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/guest/image"
	"sandbar/vm"
)

// Session states: the store's (store.State), named here for callers of
// this package.
const (
	StateProvisioning = store.StateProvisioning
	StateBooting      = store.StateBooting
	StateRunning      = store.StateRunning
	StateStopping     = store.StateStopping
	StateStopped      = store.StateStopped
	StateFailed       = store.StateFailed
	StateInterrupted  = store.StateInterrupted
	StateSuspended    = store.StateSuspended
)

// Activities of a running session.
const (
	ActivityWorking = "working"
	ActivityWaiting = "waiting" // the agent finished a turn and waits for input
	// ActivityRetrying: the agent's requests to its model API fail and it
	// retries them; the reason says why in words ("Can't reach the
	// Anthropic API — retry 3/10").
	ActivityRetrying = "retrying"
)

// Live reports whether a session in state s has (or is getting) a VM.
func Live(s store.State) bool { return s.Live() }

// Errors the Manager returns, checked with errors.Is.
var (
	ErrNotFound       = store.ErrNotFound
	ErrBudget         = errors.New("not enough memory for another session")
	ErrState          = errors.New("not possible in this state")
	ErrOwnedElsewhere = errors.New("session runs in another Sandbar process")
	ErrNoCredentials  = errors.New("no credentials for the agent")
	ErrBadOptions     = errors.New("invalid session options")
)

// SecretSource gives the agent's environment from the keyring.
type SecretSource interface {
	Names(ctx context.Context) ([]string, error)
	Env(ctx context.Context, names []string) (map[string]string, error)
}

// Config wires a Manager to the real parts.
type Config struct {
	Paths      config.Paths
	Store      *store.Store
	Secrets    SecretSource
	Hypervisor vm.Hypervisor
	// Hosts are the remote hosts sessions may run on (start --on); nil
	// runs every session here.
	Hosts RemoteHosts
	// Image returns the guest image to boot, building it if need be.
	Image func(ctx context.Context) (*image.Image, error)
	// HostMemory and HostCPUs are the machine's capacity; zero means ask
	// the system.
	HostMemory uint64
	HostCPUs   int
	Logger     *slog.Logger
	// ReadyTimeout bounds each boot; default sandbox.DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StopGrace is how long the agent gets after SIGTERM; default 5 s.
	StopGrace time.Duration
	// WatchSources makes the Manager watch each project's refs and keep
	// its base disk at the checked-out commit built (see refwatch.go) from
	// the start; engine.Listen turns it on for the engine in any case.
	WatchSources bool
	// AnthropicUpstream overrides where the model-API broker sends the
	// agent's requests (main reads SANDBAR_ANTHROPIC_UPSTREAM into it).
	AnthropicUpstream string
	// CAStore keeps the CA that HTTPS credential brokering signs with
	// (the keyring); without it, secrets bound to hosts other than the
	// model API are refused.
	CAStore broker.KeyStore
	// HostTrust finds the CA certificates this machine trusts beyond the
	// stock bundle, which sessions carry unless store.SettingHostCerts is
	// off; nil: none are.
	HostTrust HostTrust
	// UpstreamRoots verify the hosts brokered HTTPS goes to; nil means
	// the system's roots.
	UpstreamRoots *x509.CertPool
	// NetDial opens the network's connections on the host; nil means a
	// net.Dialer.
	NetDial func(ctx context.Context, network, address string) (net.Conn, error)
	// Proxy is the host's proxy (main reads it once at start): the
	// session networks' TCP and the model-API broker's upstream go
	// through it. Nil connects directly.
	Proxy *hostproxy.Config
	// Clock is the host's clock a running guest's is kept to (clock.go);
	// nil means the system's. ClockCheck is how often it is read; default
	// 5 s.
	Clock      HostClock
	ClockCheck time.Duration
	// Now is the time the trash is kept by (trash.go); nil means
	// time.Now. TrashKeep is how long a deleted session stays in the
	// trash; default DefaultTrashKeep.
	Now       func() time.Time
	TrashKeep time.Duration
}

// Manager runs sessions.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	hub   *hub
	owner store.Owner

	mu   sync.Mutex
	runs map[string]*run
	// starting marks the sessions a Restart is starting, from its checks
	// until their run is in runs (restart.go).
	starting map[string]struct{}
	// mirrorLocks serialise the work in each project's own repository.
	mirrorLocks map[int64]chan struct{}
	// diffStats caches DiffStat by project, base and saved snapshot.
	diffStats map[string]workspace.DiffStat
	// storeMu lets one session's log lines be written to the store at a
	// time: one writer per process keeps SQLite's lock contention low.
	storeMu sync.Mutex
	// watched holds, for each project whose refs are watched, what ends
	// that watch; watching is on once the Manager is the engine, closing
	// stops new watches, and life ends them all.
	watched    map[int64]context.CancelFunc
	watching   bool
	closing    bool
	life       context.Context
	lifeCancel context.CancelFunc
	wg         sync.WaitGroup
	// recoverLater: Recover found the disk full; admit runs it again.
	recoverLater atomic.Bool
	// prep holds the project environments being prepared (prepared.go).
	prep preparer
}

// New returns a Manager. It recovers nothing: only the engine, the one
// process that holds the data directory's engine lock, may mark sessions
// interrupted and end orphan VMs, and it calls Recover once it holds it.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Hypervisor == nil || cfg.Image == nil {
		return nil, errors.New("session.New: Store, Hypervisor and Image are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HostMemory == 0 {
		cfg.HostMemory = hostMemory()
	}
	if cfg.HostCPUs == 0 {
		cfg.HostCPUs = runtime.NumCPU()
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = newSystemClock()
	}
	if cfg.ClockCheck <= 0 {
		cfg.ClockCheck = defaultClockCheck
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TrashKeep <= 0 {
		cfg.TrashKeep = DefaultTrashKeep
	}
	if err := cfg.Paths.Ensure(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, hub: newHub(), owner: selfOwner(), runs: map[string]*run{}}
	m.life, m.lifeCancel = context.WithCancel(context.Background())
	if cfg.WatchSources {
		m.watchSources(ctx)
	}
	return m, nil
}

// Owner is this process as the store records VM owners.
func (m *Manager) Owner() store.Owner { return m.owner }

// Recover marks live sessions whose owner process is gone interrupted,
// and ends the VMs such an owner left running where the backend can find
// them (vm.OrphanReaper): where the system could not kill them with
// their owner (macOS has no parent-death signal). Then it heals the
// database from the disk (heal.go): sessions whose folder or saved work
// is there but whose row is not are adopted back, marked recovered, and
// half-taken saves are removed.
//
// Only the engine may call it (engine.Listen does, once it holds the
// engine lock): a process that is not the engine could otherwise take a
// session the engine has just restarted for one whose owner died. Each
// change is made only if the session is still as it was read (the same
// owner, still live), and its VM is ended only then.
func (m *Manager) Recover(ctx context.Context) (err error) {
	// On a full disk the engine starts all the same, and the next
	// start recovers first (admit).
	defer func() { m.recoverLater.Store(errors.Is(err, ErrDiskFull)) }()
	defer func() {
		if err == nil {
			m.keepReserve(ctx)
		}
	}()
	sessions, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: store.LiveStates})
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
			continue // another Sandbar runs it
		}
		if err := m.recoverSession(ctx, s); err != nil {
			return err
		}
	}
	// Then what the database lost is adopted back from the disk. Only a
	// full disk stops the engine's start here (it starts all the same,
	// and the next start recovers again); anything else that keeps a
	// session from being adopted is logged and left on disk.
	if _, err := m.heal(ctx); errors.Is(err, ErrDiskFull) {
		return err
	} else if err != nil {
		m.log.Warn("heal the database from what is on disk", "err", err)
	}
	return nil
}

// Orphaned reports whether s is live in the store while the process that
// ran it is gone: what the engine's Recover marks interrupted. A process
// that is not the engine, seeing one, reaches the engine (which starts
// one, and so recovers) rather than recovering itself.
func Orphaned(s store.Session) bool { return Live(s.State) && !ownerAlive(s.Owner) }

// errChanged is recoverSession's word that a session changed since it was
// read: someone else has it now.
var errChanged = errors.New("the session changed since recovery read it")

// recoverSession marks s, as Recover read it, interrupted and ends the VM
// its dead owner left, unless it has changed since.
func (m *Manager) recoverSession(ctx context.Context, was store.Session) error {
	reason := fmt.Sprintf("Sandbar stopped while this session was %s (process %d): its workspace is intact; restart it to go on", was.State, was.Owner.PID)
	s, err := m.cfg.Store.UpdateSession(ctx, was.ID, func(s *store.Session) error {
		if !Live(s.State) || !sameOwner(s.Owner, was.Owner) {
			return errChanged
		}
		s.State, s.Activity, s.Reason, s.Ended = StateInterrupted, "", reason, time.Now()
		return nil
	})
	switch {
	case errors.Is(err, errChanged) || errors.Is(err, store.ErrNotFound):
		m.log.Info("session changed while recovering: left as it is", "session", was.ID)
		return nil
	case err != nil:
		return err
	}
	// The VM's directory is the session's (see newRun: the run boots its
	// VM with Dir r.dir), where the backend left its record of the VM.
	if r, where := m.reaper(ctx, s.ID); r != nil {
		if killed, err := r.ReapOrphan(ctx, m.cfg.Paths.SessionDir(s.ID).VMDir()); err != nil {
			m.log.Warn("end orphan VM", "session", s.ID, "err", err)
		} else if killed {
			// A warning: the system (or the host's guard) should have
			// ended it with its owner, and someone may look for why.
			m.log.Warn("ended an orphan VM", "session", s.ID, "on", where)
		}
	}
	// A save the dead engine was taking in is of no use (the work is
	// still in the clone); the spool may be large.
	if err := os.Remove(m.cfg.Paths.SessionDir(s.ID).SaveSpool()); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("remove a half-taken save", "session", s.ID, "err", err)
	}
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "state", Detail: string(s.State) + ": " + reason})
	m.publishState(s)
	m.log.Info("session interrupted", "session", s.ID, "was", was.State)
	return nil
}

// Subscribe returns events of every session (or of one, by id) until ctx
// is done.
func (m *Manager) Subscribe(ctx context.Context, session string) <-chan Event {
	return m.hub.subscribe(ctx, session)
}

// launch runs a session's life on its own goroutine.
func (m *Manager) launch(r *run, life func(ctx context.Context) error) {
	m.mu.Lock()
	m.runs[r.id] = r
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			if m.runs[r.id] == r {
				delete(m.runs, r.id)
			}
			m.mu.Unlock()
		}()
		life(r.ctx)
	}()
}

// running returns the live run of a session owned by this process.
func (m *Manager) running(id string) *run {
	m.mu.Lock()
	r := m.runs[id]
	m.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.done: // ended; launch forgets it a moment later
		return nil
	default:
		return r
	}
}

// liveRun finds the session and its run here, or says why there is none.
func (m *Manager) liveRun(ctx context.Context, ref string) (store.Session, *run, error) {
	s, err := m.findIntact(ctx, ref)
	if err != nil {
		return s, nil, err
	}
	if r := m.running(s.ID); r != nil {
		return s, r, nil
	}
	if Live(s.State) && ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
		return s, nil, fmt.Errorf("session %s runs in Sandbar process %d: %w", s.ID, s.Owner.PID, ErrOwnedElsewhere)
	}
	return s, nil, fmt.Errorf("session %s is %s, not running: restart it with `sandbar restart %s`: %w", s.ID, s.State, short(s.ID), ErrState)
}

// Close stops every session this process runs, gracefully and in
// parallel, within ctx.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	runs := make([]*run, 0, len(m.runs))
	for _, r := range m.runs {
		runs = append(runs, r)
	}
	m.closing = true
	m.mu.Unlock()
	m.lifeCancel()
	for _, r := range runs {
		r.requestStop(ReasonQuit)
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, r := range runs {
			r.kill()
		}
		<-done
		return ctx.Err()
	}
}

// Running lists the ids of sessions this process runs.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.runs))
	for id := range m.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// setState persists a state change and publishes it.
func (m *Manager) setState(ctx context.Context, id string, state store.State, activity, reason string, exit *int) (store.Session, error) {
	s, err := m.cfg.Store.UpdateSession(ctx, id, func(s *store.Session) error {
		s.State, s.Activity, s.Reason = state, activity, reason
		if exit != nil {
			s.ExitCode = exit
		}
		switch state {
		case StateStopped, StateFailed, StateInterrupted:
			s.Ended = time.Now()
			s.Activity = ""
			if state == StateFailed {
				s.Error = reason
			}
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	m.cfg.Store.AppendEvent(ctx, id, store.Event{Time: time.Now(), Kind: "state", Detail: strings.TrimSpace(string(state) + " " + activity + ": " + reason)})
	m.publishState(s)
	return s, nil
}

func (m *Manager) publishState(s store.Session) {
	m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventState, State: s.State, Activity: s.Activity, Reason: s.Reason, ExitCode: s.ExitCode})
}

// baseCommit is the commit the session's branch started from.
func (m *Manager) baseCommit(s store.Session) string {
	if b := m.inspect(s.ID).BaseCommit; b != "" {
		return b
	}
	return s.Base
}

// short is the id prefix people type.
func short(id string) string {
	if len(id) > 6 {
		return id[:6]
	}
	return id
}
