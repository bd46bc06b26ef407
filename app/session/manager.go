// Package session is the orchestrator: the Manager owns every session's
// life, from its workspace (a base disk built from Sandbar's repository
// of the project, see workspace.go) through the VM boot and the agent's
// run to saving its work, stop, merge back and removal. It calls the other parts through small
// interfaces (store, workspace, secrets, a vm.Hypervisor through
// app/sandbox) and publishes what happens to subscribers: the tray, the
// windows and the CLI.
//
// A session's VM belongs to the process that booted it (its Owner in the
// store). Other processes see such a session as owned elsewhere and reach
// it through that process (the engine, app/engine).
package session

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"sandbar/app/config"
	"sandbar/app/net/broker"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/guest/image"
	"sandbar/vm"
)

// Session states, persisted in the store.
const (
	StateProvisioning = "provisioning" // cloning the repository
	StateBooting      = "booting"      // the VM is starting
	StateRunning      = "running"      // the agent runs (Activity: working or waiting)
	StateStopping     = "stopping"
	StateStopped      = "stopped"
	StateFailed       = "failed"
	StateInterrupted  = "interrupted" // Sandbar went away while it ran; restartable
)

// Activities of a running session.
const (
	ActivityWorking = "working"
	ActivityWaiting = "waiting" // the agent finished a turn and waits for input
)

// Live reports whether a session in state s has (or is getting) a VM.
func Live(s string) bool {
	switch s {
	case StateProvisioning, StateBooting, StateRunning, StateStopping:
		return true
	}
	return false
}

// Defaults for Options left zero.
const (
	DefaultCPUs      = 2
	DefaultMemoryMiB = 2048
	DefaultDiskGiB   = 8
	DefaultBudget    = 0.6
)

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
	// UpstreamRoots verify the hosts brokered HTTPS goes to; nil means
	// the system's roots.
	UpstreamRoots *x509.CertPool
	// NetDial opens the network's connections on the host; nil means a
	// net.Dialer.
	NetDial func(ctx context.Context, network, address string) (net.Conn, error)
	// Clock is the host's clock a running guest's is kept to (clock.go);
	// nil means the system's. ClockCheck is how often it is read; default
	// 5 s.
	Clock      HostClock
	ClockCheck time.Duration
}

// AgentSpec says what runs as the agent. The zero value is Claude Code.
type AgentSpec struct {
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// Claude reports whether this is the default Claude Code agent.
func (a AgentSpec) Claude() bool { return a.Command == "" || a.Command == "claude" && len(a.Args) == 0 }

// ClaudeArgs is how the default agent runs: headless, structured in and out.
var ClaudeArgs = []string{"-p", "--verbose", "--output-format", "stream-json", "--input-format", "stream-json", "--dangerously-skip-permissions"}

// Options for Start.
type Options struct {
	// Project is a project id, name or path; Repo is a repository path
	// that is added as a project first if need be. One is required.
	Project string
	Repo    string
	// Base is the branch, tag or commit to start from; default the
	// source's current branch.
	Base   string
	Prompt string
	Agent  AgentSpec
	// Limits; zero means the default (settings, else the constants).
	CPUs      int
	MemoryMiB int
	DiskGiB   int
	// NoNetwork turns the guest's network off (default on).
	NoNetwork bool
	// Network is the session's egress mode: "off", "allowlist" or
	// "open"; "" follows the project's and Sandbar's settings.
	Network     string
	Timeout     time.Duration // wall clock; 0 = none
	IdleTimeout time.Duration // 0 = none
	// IdleStop stops the session at the idle timeout instead of marking it
	// waiting.
	IdleStop bool
}

// Manager runs sessions.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	hub   *hub
	owner store.Owner

	mu   sync.Mutex
	runs map[string]*run
	// mirrorLocks serialise the work in each project's own repository.
	mirrorLocks map[int64]chan struct{}
	// watched holds, for each project whose refs are watched, what ends
	// that watch; watching is on once the Manager is the engine, closing
	// stops new watches, and life ends them all.
	watched    map[int64]context.CancelFunc
	watching   bool
	closing    bool
	life       context.Context
	lifeCancel context.CancelFunc
	wg         sync.WaitGroup
}

// New returns a Manager and recovers what a previous Sandbar left: live
// sessions whose owner is gone become interrupted and their orphan VMs
// are ended.
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
	if err := cfg.Paths.Ensure(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, hub: newHub(), owner: selfOwner(), runs: map[string]*run{}}
	m.life, m.lifeCancel = context.WithCancel(context.Background())
	if err := m.recover(ctx); err != nil {
		m.lifeCancel()
		return nil, err
	}
	if cfg.WatchSources {
		m.watchSources(ctx)
	}
	return m, nil
}

// SessionDir is the directory session id owns (its workspace, logs and
// disks), for the windows that show or open its files.
func (m *Manager) SessionDir(id string) string { return m.cfg.Paths.Session(id) }

// Owner is this process as the store records VM owners.
func (m *Manager) Owner() store.Owner { return m.owner }

// recover marks live sessions whose owner process is gone interrupted.
func (m *Manager) recover(ctx context.Context) error {
	sessions, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: []string{StateProvisioning, StateBooting, StateRunning, StateStopping}})
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
			continue // another Sandbar runs it
		}
		if oe, ok := m.cfg.Hypervisor.(interface {
			EndOrphan(dir string) (bool, error)
		}); ok {
			if killed, err := oe.EndOrphan(m.cfg.Paths.Session(s.ID)); err != nil {
				m.log.Warn("end orphan VM", "session", s.ID, "err", err)
			} else if killed {
				m.log.Info("ended an orphan VM", "session", s.ID)
			}
		}
		reason := fmt.Sprintf("Sandbar stopped while this session was %s (process %d): its workspace is intact; restart it to go on", s.State, s.Owner.PID)
		if _, err := m.setState(ctx, s.ID, StateInterrupted, "", reason, nil); err != nil {
			return err
		}
		m.log.Info("session interrupted", "session", s.ID, "was", s.State)
	}
	return nil
}

// Subscribe returns events of every session (or of one, by id) until ctx
// is done.
func (m *Manager) Subscribe(ctx context.Context, session string) <-chan Event {
	return m.hub.subscribe(ctx, session)
}

// AddProject adds the repository holding path as a project. The returned
// note is non-empty when the user should hear something (a subfolder was
// given, so its repository's top level was added).
func (m *Manager) AddProject(ctx context.Context, path string) (store.Project, string, error) {
	repo, err := workspace.Resolve(ctx, path)
	if err != nil {
		return store.Project{}, "", err
	}
	note := ""
	if repo.Subdir != "" {
		note = fmt.Sprintf("%s is inside the repository %s: added that", path, repo.Root)
	}
	if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
		return p, "", fmt.Errorf("%s is already the project %q: %w", repo.Root, p.Name, store.ErrExists)
	}
	p, err := m.cfg.Store.AddProject(ctx, store.Project{Name: repo.Name, Path: repo.Root, DefaultBranch: repo.Branch})
	if err == nil {
		m.watchSource(p)
	}
	return p, note, err
}

// Projects lists the projects, most recently used first.
func (m *Manager) Projects(ctx context.Context) ([]store.Project, error) {
	return m.cfg.Store.Projects(ctx)
}

// RemoveProject forgets a project (never touching the repository); it
// refuses while the project has sessions.
func (m *Manager) RemoveProject(ctx context.Context, ref string) error {
	p, err := m.findProject(ctx, ref)
	if err != nil {
		return err
	}
	if err := m.cfg.Store.RemoveProject(ctx, p.ID); err != nil {
		return err
	}
	// Its watch ends, and Sandbar's repository and base disks of it go:
	// a project added later may be given the same id.
	m.mu.Lock()
	if stop := m.watched[p.ID]; stop != nil {
		stop()
		delete(m.watched, p.ID)
	}
	m.mu.Unlock()
	if _, unlock, err := m.mirror(ctx, p.ID); err == nil {
		err = os.RemoveAll(m.cfg.Paths.Project(p.ID))
		unlock()
		if err != nil {
			return fmt.Errorf("delete Sandbar's copy of %s: %w", p.Name, err)
		}
	}
	return nil
}

// findProject resolves an id, a name or a path.
func (m *Manager) findProject(ctx context.Context, ref string) (store.Project, error) {
	ps, err := m.cfg.Store.Projects(ctx)
	if err != nil {
		return store.Project{}, err
	}
	abs, _ := filepath.Abs(ref)
	var byName []store.Project
	for _, p := range ps {
		switch {
		case fmt.Sprint(p.ID) == ref, p.Path == ref, p.Path == abs:
			return p, nil
		case p.Name == ref:
			byName = append(byName, p)
		}
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		if repo, err := workspace.Resolve(ctx, ref); err == nil {
			if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
				return p, nil
			}
		}
		return store.Project{}, fmt.Errorf("no project %q: add it with `sandbar project add PATH` (or `sandbar project ls`): %w", ref, ErrNotFound)
	}
	var paths []string
	for _, p := range byName {
		paths = append(paths, fmt.Sprintf("%d (%s)", p.ID, p.Path))
	}
	return store.Project{}, fmt.Errorf("several projects are named %q: use an id or a path: %s: %w", ref, strings.Join(paths, ", "), store.ErrAmbiguous)
}

// List returns the sessions, newest first.
func (m *Manager) List(ctx context.Context) ([]store.Session, error) {
	return m.cfg.Store.Sessions(ctx, store.SessionFilter{})
}

// Get returns a session by id or unique id prefix.
func (m *Manager) Get(ctx context.Context, id string) (store.Session, error) {
	return m.cfg.Store.FindSession(ctx, id)
}

// Project returns a project by id.
func (m *Manager) Project(ctx context.Context, id int64) (store.Project, error) {
	return m.cfg.Store.Project(ctx, id)
}

// limits fills opts' zero limits from the settings, then the defaults.
func (m *Manager) limits(ctx context.Context, o *Options) {
	get := func(key string, def int) int {
		if v, ok, _ := m.cfg.Store.Setting(ctx, key); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
				return n
			}
		}
		return def
	}
	if o.CPUs == 0 {
		o.CPUs = min(get("default_cpus", DefaultCPUs), m.cfg.HostCPUs)
	}
	if o.MemoryMiB == 0 {
		o.MemoryMiB = get("default_memory_mib", DefaultMemoryMiB)
	}
	if o.DiskGiB == 0 {
		o.DiskGiB = get("default_disk_gib", DefaultDiskGiB)
	}
	if o.Agent.Command == "" {
		if v, ok, _ := m.cfg.Store.Setting(ctx, "default_agent"); ok && strings.TrimSpace(v) != "" {
			o.Agent = AgentSpec{Command: "sh", Args: []string{"-c", v}}
		}
	}
}

// Budget is the memory Sandbar may give sessions, and what running ones
// use now.
type Budget struct {
	Host, Limit, Used uint64 // bytes
	Share             float64
}

// Free is what another session may still have.
func (b Budget) Free() uint64 {
	if b.Used >= b.Limit {
		return 0
	}
	return b.Limit - b.Used
}

// Budget reports the host memory budget.
func (m *Manager) Budget(ctx context.Context) (Budget, error) {
	share := DefaultBudget
	if v, ok, _ := m.cfg.Store.Setting(ctx, "memory_budget"); ok {
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil && f > 0 && f <= 1 {
			share = f
		}
	}
	b := Budget{Host: m.cfg.HostMemory, Share: share, Limit: uint64(float64(m.cfg.HostMemory) * share)}
	live, err := m.cfg.Store.Sessions(ctx, store.SessionFilter{States: []string{StateProvisioning, StateBooting, StateRunning, StateStopping}})
	if err != nil {
		return b, err
	}
	for _, s := range live {
		b.Used += uint64(s.Limits.MemoryMiB) * vm.MiB
	}
	return b, nil
}

// HostCPUs is the machine's CPU count, for limits shown beside it.
func (m *Manager) HostCPUs() int { return m.cfg.HostCPUs }

// Start validates opts, records a new session and starts it in the
// background: clone, boot, agent. It returns once the session is recorded;
// its progress arrives as events. Errors of the options (no such project,
// impossible limits, not enough memory, no credentials) are returned here
// and nothing is created.
func (m *Manager) Start(ctx context.Context, o Options) (store.Session, error) {
	var proj store.Project
	var err error
	switch {
	case o.Repo != "":
		proj, err = m.projectForRepo(ctx, o.Repo)
	case o.Project != "":
		proj, err = m.findProject(ctx, o.Project)
	default:
		err = fmt.Errorf("no project: give a project or a repository path: %w", ErrBadOptions)
	}
	if err != nil {
		return store.Session{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return store.Session{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	m.limits(ctx, &o)
	if err := m.checkLimits(ctx, o); err != nil {
		return store.Session{}, err
	}
	repoRules, err := workspace.ReadNetworkFile(repo.Root)
	if err != nil {
		return store.Session{}, fmt.Errorf("project %s: %w: %w", proj.Name, err, ErrNetworkRules)
	}
	if len(repoRules) > 0 {
		if _, err := parseRules(string(repoRules), policy.SourceRepository, filepath.Join(repo.Root, workspace.NetworkFile)); err != nil {
			return store.Session{}, err
		}
	}
	setup, err := m.agentSetup(ctx, o.Agent, proj.ID)
	if err != nil {
		return store.Session{}, err
	}
	agent := o.Agent
	kind := "custom"
	if agent.Claude() {
		agent, kind = AgentSpec{Command: "claude", Args: ClaudeArgs}, "claude"
	}
	id, err := newID()
	if err != nil {
		return store.Session{}, err
	}
	now := time.Now()
	s := store.Session{
		ID: id, ProjectID: proj.ID, Branch: "sandbar/" + id, Base: o.Base, Prompt: o.Prompt,
		Agent: store.Agent{Command: agent.Command, Args: agent.Args, Kind: kind},
		Limits: store.Limits{CPUs: o.CPUs, MemoryMiB: o.MemoryMiB, DiskGiB: o.DiskGiB, Network: !o.NoNetwork && o.Network != NetworkOff,
			NetMode: netMode(o), Timeout: o.Timeout, IdleTimeout: o.IdleTimeout},
		State: StateProvisioning, Reason: "preparing a clone of " + repo.Root, Owner: m.owner,
		Timings: map[string]time.Duration{}, Created: now, Updated: now, Started: now,
	}
	if err := os.MkdirAll(m.cfg.Paths.Session(id), 0o700); err != nil {
		return store.Session{}, fmt.Errorf("create the session directory: %w", err)
	}
	if len(repoRules) > 0 {
		if err := os.WriteFile(filepath.Join(m.cfg.Paths.Session(id), repoNetworkFile), repoRules, 0o600); err != nil {
			os.RemoveAll(m.cfg.Paths.Session(id))
			return store.Session{}, fmt.Errorf("keep the session's copy of %s: %w", workspace.NetworkFile, err)
		}
	}
	if _, _, err := m.composeWith(ctx, s, false); err != nil {
		os.RemoveAll(m.cfg.Paths.Session(id))
		return store.Session{}, err
	}
	if err := m.cfg.Store.CreateSession(ctx, s); err != nil {
		os.RemoveAll(m.cfg.Paths.Session(id))
		return store.Session{}, err
	}
	m.cfg.Store.TouchProject(ctx, proj.ID, now)
	m.watchSource(proj)
	m.publishState(s)
	r := m.newRun(s, repo, setup, o.IdleStop)
	m.launch(r, func(ctx context.Context) error { return r.provisionAndRun(ctx) })
	return s, nil
}

func (m *Manager) projectForRepo(ctx context.Context, path string) (store.Project, error) {
	repo, err := workspace.Resolve(ctx, path)
	if err != nil {
		return store.Project{}, err
	}
	if p, err := m.cfg.Store.ProjectByPath(ctx, repo.Root); err == nil {
		return p, nil
	}
	p, _, err := m.AddProject(ctx, repo.Root)
	return p, err
}

// checkLimits refuses impossible limits and a start beyond the budget.
func (m *Manager) checkLimits(ctx context.Context, o Options) error {
	var problems []string
	if o.CPUs < 1 || o.CPUs > m.cfg.HostCPUs {
		problems = append(problems, fmt.Sprintf("vCPUs is %d: give 1 to %d (this machine's cores)", o.CPUs, m.cfg.HostCPUs))
	}
	if uint64(o.MemoryMiB)*vm.MiB < vm.MinMemory {
		problems = append(problems, fmt.Sprintf("memory is %d MiB: give at least %d MiB", o.MemoryMiB, vm.MinMemory/vm.MiB))
	}
	if o.DiskGiB < 1 || o.DiskGiB > 1024 {
		problems = append(problems, fmt.Sprintf("disk is %d GiB: give 1 to 1024 GiB", o.DiskGiB))
	}
	if o.Timeout < 0 || o.IdleTimeout < 0 {
		problems = append(problems, "timeouts must not be negative")
	}
	switch o.Network {
	case "", NetworkOff, NetworkAllowlist, NetworkOpen:
	default:
		problems = append(problems, fmt.Sprintf("network %q is not a mode: use allowlist, open or off", o.Network))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(problems, "; "), ErrBadOptions)
	}
	b, err := m.Budget(ctx)
	if err != nil {
		return err
	}
	want := uint64(o.MemoryMiB) * vm.MiB
	if b.Used+want > b.Limit {
		return fmt.Errorf("a session with %d MiB does not fit: running sessions use %d MiB of the %d MiB Sandbar may use (%.0f%% of %d MiB); %d MiB is free: ask for less memory or stop a session: %w",
			o.MemoryMiB, b.Used/vm.MiB, b.Limit/vm.MiB, b.Share*100, b.Host/vm.MiB, b.Free()/vm.MiB, ErrBudget)
	}
	return nil
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
	s, err := m.cfg.Store.FindSession(ctx, ref)
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

// Stop stops a running session: the agent gets SIGTERM and a grace
// period, then the VM shuts down. It returns when the session is stopped.
func (m *Manager) Stop(ctx context.Context, ref string) (store.Session, error) {
	s, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return s, err
	}
	r.requestStop(ReasonStoppedByUser)
	select {
	case <-r.done:
	case <-ctx.Done():
		return s, ctx.Err()
	}
	return m.cfg.Store.Session(ctx, s.ID)
}

// Wait blocks until the session is no longer live here and returns it.
func (m *Manager) Wait(ctx context.Context, ref string) (store.Session, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return s, err
	}
	if r := m.running(s.ID); r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	return m.cfg.Store.Session(ctx, s.ID)
}

// Restart boots a stopped, failed or interrupted session again on its
// workspace and scratch disk and starts its agent; Claude Code continues
// its conversation (--continue).
func (m *Manager) Restart(ctx context.Context, ref string) (store.Session, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return s, err
	}
	if r := m.running(s.ID); r != nil && !Live(s.State) {
		// Its end is recorded; the run is finishing its last writes.
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	if r := m.running(s.ID); r != nil || (Live(s.State) && ownerAlive(s.Owner)) {
		return s, fmt.Errorf("session %s is %s: stop it first: %w", s.ID, s.State, ErrState)
	}
	if m.isLegacy(s) {
		return s, m.legacyError(s)
	}
	if _, err := readSessionFile(m.cfg.Paths.Session(s.ID), baseDiskFile); err != nil {
		return s, fmt.Errorf("session %s has no workspace left: start a new session: %w", s.ID, ErrState)
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return s, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return s, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	agent := AgentSpec{Command: s.Agent.Command, Args: s.Agent.Args}
	if s.Agent.Kind == "claude" {
		agent = AgentSpec{}
	}
	setup, err := m.agentSetup(ctx, agent, s.ProjectID)
	if err != nil {
		return s, err
	}
	if _, _, err := m.composePolicy(ctx, s); err != nil {
		return s, err
	}
	b, err := m.Budget(ctx)
	if err != nil {
		return s, err
	}
	if want := uint64(s.Limits.MemoryMiB) * vm.MiB; b.Used+want > b.Limit {
		return s, fmt.Errorf("restarting needs %d MiB but %d MiB is free: stop a session first: %w", s.Limits.MemoryMiB, b.Free()/vm.MiB, ErrBudget)
	}
	s, err = m.cfg.Store.UpdateSession(ctx, s.ID, func(x *store.Session) error {
		x.State, x.Activity, x.Reason = StateBooting, "", "restarting"
		x.Owner, x.ExitCode, x.Error = m.owner, nil, ""
		x.Started, x.Ended = time.Now(), time.Time{}
		return nil
	})
	if err != nil {
		return s, err
	}
	m.publishState(s)
	r := m.newRun(s, repo, setup, false)
	r.restart = true
	m.launch(r, func(ctx context.Context) error { return r.bootAndRun(ctx) })
	return s, nil
}

// Chat sends text to the agent's input.
func (m *Manager) Chat(ctx context.Context, ref, text string) error {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return err
	}
	return r.chat(text)
}

// Exec runs a command in a running session's VM; its output is redacted.
func (m *Manager) Exec(ctx context.Context, ref string, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	_, r, err := m.liveRun(ctx, ref)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return r.exec(ctx, req, stdout, stderr)
}

// Merge brings the session's branch into its project's repository (see
// workspace.Merge); the repository's working tree is never touched. A
// running session's work is saved first, so the merge takes its latest.
func (m *Manager) Merge(ctx context.Context, ref string, force bool) (workspace.MergeResult, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return workspace.MergeResult{}, fmt.Errorf("project %s: %w", proj.Name, err)
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return workspace.MergeResult{}, err
		}
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.MergeResult{}, err
	}
	defer unlock()
	res, err := workspace.Merge(ctx, repo, mr, s.ID, s.Branch, force)
	if err != nil {
		return res, err
	}
	m.cfg.Store.AppendEvent(ctx, s.ID, store.Event{Time: time.Now(), Kind: "merge", Detail: fmt.Sprintf("%s → %s at %s", s.Branch, repo.Root, res.Commit)})
	return res, nil
}

// Remove deletes a session: its VM (stopped first), workspace, scratch
// disk, logs and record. It refuses while the workspace has uncommitted
// changes or commits not in the project's repository, unless force.
func (m *Manager) Remove(ctx context.Context, ref string, force bool) error {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return err
	}
	if Live(s.State) && m.running(s.ID) == nil && ownerAlive(s.Owner) && !sameOwner(s.Owner, m.owner) {
		return fmt.Errorf("session %s runs in Sandbar process %d: %w", s.ID, s.Owner.PID, ErrOwnedElsewhere)
	}
	dir := m.cfg.Paths.Session(s.ID)
	if !force {
		if err := m.checkRemovable(ctx, s); err != nil {
			return err
		}
	}
	if r := m.running(s.ID); r != nil {
		r.requestStop(ReasonRemoved)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := removeSessionDir(dir); err != nil {
		return err
	}
	if err := m.cfg.Store.DeleteSession(ctx, s.ID); err != nil {
		return err
	}
	if mr, unlock, err := m.mirror(ctx, s.ProjectID); err == nil {
		if err := mr.Forget(ctx, s.ID); err != nil {
			m.log.Warn("forget the session's saved work", "session", s.ID, "err", err)
		}
		m.pruneBases(ctx, s.ProjectID)
		unlock()
	}
	m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventRemoved})
	return nil
}

// Logs returns stored log lines after seq (see store.Logs).
func (m *Manager) Logs(ctx context.Context, ref string, afterSeq int64, limit int) ([]store.LogLine, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return nil, err
	}
	return m.cfg.Store.Logs(ctx, s.ID, afterSeq, limit)
}

// Transcript returns a Claude Code session's transcript so far.
func (m *Manager) Transcript(ctx context.Context, ref string) ([]Entry, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return nil, err
	}
	return readTranscript(filepath.Join(m.cfg.Paths.Session(s.ID), transcriptFile))
}

// Changes returns the session's changes against its base: asked of its
// VM while it runs (the agent's own view), else read from the work it
// last saved.
func (m *Manager) Changes(ctx context.Context, ref string) (workspace.Changes, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return workspace.Changes{}, err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		return r.liveChanges(ctx)
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return workspace.Changes{}, err
	}
	defer unlock()
	return mr.SavedStatus(ctx, s.ID, m.baseCommit(s))
}

// maxDiff bounds one file's diff shown to a person.
const maxDiff = 4 << 20

// FileDiff returns the unified diff of one changed file against the
// session's base, from its VM while it runs, else from its saved work.
func (m *Manager) FileDiff(ctx context.Context, ref string, f workspace.FileChange) (string, error) {
	s, err := m.cfg.Store.FindSession(ctx, ref)
	if err != nil {
		return "", err
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		out, err := workspace.FileDiff(ctx, r.guestGit, m.baseCommit(s), f)
		return truncateDiff(out), err
	}
	mr, unlock, err := m.savedWork(ctx, s)
	if err != nil {
		return "", err
	}
	defer unlock()
	out, err := mr.SavedDiff(ctx, s.ID, m.baseCommit(s), f.Path, maxDiff+1)
	return truncateDiff(out), err
}

// DiffTruncated ends a diff cut at maxDiff bytes.
const DiffTruncated = "\n[diff truncated]\n"

// truncateDiff bounds a diff to maxDiff bytes, saying so.
func truncateDiff(d string) string {
	if len(d) > maxDiff {
		return d[:maxDiff] + DiffTruncated
	}
	return d
}

// checkRemovable refuses to delete a session whose work is not in its
// project's repository (see workspace.CheckRemovable), saving a running
// session's work first.
func (m *Manager) checkRemovable(ctx context.Context, s store.Session) error {
	if m.isLegacy(s) {
		return fmt.Errorf("%w: use --force to delete it", m.legacyError(s))
	}
	if err := m.saveFailed(s); err != nil {
		return fmt.Errorf("%w; or use --force to delete it anyway", err)
	}
	if r := m.running(s.ID); r != nil && r.vmUp() {
		if _, err := r.save(ctx); err != nil {
			return fmt.Errorf("%w: use --force to delete the session anyway", err)
		}
	}
	proj, err := m.cfg.Store.Project(ctx, s.ProjectID)
	if err != nil {
		return err
	}
	repo, err := workspace.Resolve(ctx, proj.Path)
	if err != nil {
		return fmt.Errorf("project %s: %w (use --force to delete the session anyway)", proj.Name, err)
	}
	mr, unlock, err := m.mirror(ctx, s.ProjectID)
	if err != nil {
		return err
	}
	defer unlock()
	return workspace.CheckRemovable(ctx, repo, mr, s.ID, m.baseCommit(s))
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
func (m *Manager) setState(ctx context.Context, id, state, activity, reason string, exit *int) (store.Session, error) {
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
	m.cfg.Store.AppendEvent(ctx, id, store.Event{Time: time.Now(), Kind: "state", Detail: strings.TrimSpace(state + " " + activity + ": " + reason)})
	m.publishState(s)
	return s, nil
}

func (m *Manager) publishState(s store.Session) {
	m.hub.publish(Event{Session: s.ID, Time: time.Now(), Kind: EventState, State: s.State, Activity: s.Activity, Reason: s.Reason, ExitCode: s.ExitCode})
}

// baseCommit is the commit the session's branch started from.
func (m *Manager) baseCommit(s store.Session) string {
	if b, err := readSessionFile(m.cfg.Paths.Session(s.ID), baseFile); err == nil && b != "" {
		return b
	}
	return s.Base
}

func newID() (string, error) {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// short is the id prefix people type.
func short(id string) string {
	if len(id) > 6 {
		return id[:6]
	}
	return id
}
