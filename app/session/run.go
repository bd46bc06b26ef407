package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"sandbar/app/config"
	"sandbar/app/env/devcontainer"
	"sandbar/app/sandbox"
	"sandbar/app/secrets"
	"sandbar/app/store"
	"sandbar/app/workspace"
	"sandbar/vm"
)

// run is one session's life in this process: from clone (or boot, on a
// restart) to the VM's power-off.
type run struct {
	m        *Manager
	id       string
	s        store.Session
	repo     workspace.Repo
	env      map[string]string
	setup    *agentSetup
	claude   bool
	idleStop bool
	restart  bool
	// fromSaved says, in words, which saved commit a restart whose disk
	// was gone continues from (RestartFromSaved); "" otherwise.
	fromSaved string
	dir       config.SessionDir
	log       *slog.Logger
	red       *secrets.Redactor
	// includeLists is the text of the include lists the person trusted
	// (nil: none), and trustNotes what the log says of the repository's
	// settings left out; both for a new session's provisioning.
	includeLists []byte
	trustNotes   []string

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// saveMu serialises saves of the session's work.
	saveMu sync.Mutex
	// wsChanged hears the guest's workspace:changed notices (see
	// watchChanges); one pending notice is enough.
	wsChanged chan struct{}

	// suspendReq asks supervise to save the VM (suspend.go); it answers
	// on the ask's reply.
	suspendReq chan suspendAsk
	// resumeFrom is the saved VM state a resume loads instead of booting
	// ("" for a boot), and resumeActivity what the session did when it
	// was saved.
	resumeFrom, resumeActivity string

	stopOnce   sync.Once
	stopReq    chan struct{}
	stopMu     sync.Mutex
	stopReason string
	stopFailed bool // the agent's turn failed (turnFailed): the run ends failed

	agentStarted  chan sandbox.Event
	agentPrepared chan sandbox.Event
	// setupSteps run before the agent starts (runSetup): stages in
	// order, the steps of a stage together.
	setupSteps [][]SetupStep
	// envNotes is what the log says of the environment, first thing.
	envNotes []string
	// envImage is the image the environment asks for ("": Sandbar's
	// own), from envFile, with the user its programs run as; a new
	// session pulls it (pullImage).
	envImage, envFile, envUser string
	// envCfg and envFeatures are the environment's file and its
	// features' variables; stepEnv the variables its setup steps share,
	// and sandbarEnv the agent's own before the file's joined them
	// (applyEnvVars).
	envCfg      *devcontainer.Config
	envFeatures []devcontainer.EnvVar
	// envFeatSet is the features fetched for a new session, for the
	// preparation of its environment (prepared.go).
	envFeatSet *featureSet
	stepEnv    map[string]string
	sandbarEnv map[string]string
	// root is the image the agent's root is, when not Sandbar's own
	// (under mu).
	root      *RootImage
	agentExit chan sandbox.Event
	startErr  chan string

	// sink records the session's log lines and transcript.
	sink *logSink
	// live is the running tools' live output (live.go).
	live liveTools

	mu         sync.Mutex
	started    bool // the agent started
	sb         *sandbox.Sandbox
	net        *sessionNet // while the VM runs with a network
	joiner     sandbox.LineJoiner
	lastActive time.Time
	activity   string
	reason     string // the reason said with activity
	// waitingSince is when the agent began to wait for the person (by
	// Config.Now), zero while it does anything else: what auto-suspend
	// goes by (autosuspend.go).
	waitingSince time.Time
	// autoSuspendFailed: an auto-suspend of this run failed; it is not
	// tried again every check (the error is in its log already).
	autoSuspendFailed bool
	// pause is set while the VM is paused on a full disk (diskfull.go).
	pause *diskPause
	// interruptAt is when an interrupt was asked of Claude Code and its
	// turn has not ended since; interrupts counts them, for request ids.
	interruptAt time.Time
	interrupts  int

	// balloon is the VM's memory target while it waits (balloon.go),
	// under balloonMu.
	balloonMu sync.Mutex
	balloon   balloon
	// memUsed and memTotal are the guest's latest memory figures (under
	// mu), which a change of activity sizes the balloon by.
	memUsed, memTotal uint64
	// ports are the guest's latest listening ports (under mu), kept
	// with a suspended VM (suspend.go).
	ports []sandbox.Port
}

func (m *Manager) newRun(s store.Session, repo workspace.Repo, setup *agentSetup, idleStop bool) *run {
	ctx, cancel := context.WithCancel(context.Background())
	dir := m.cfg.Paths.SessionDir(s.ID)
	log := m.log.With("session", s.ID)
	return &run{
		m: m, id: s.ID, s: s, repo: repo, env: setup.env, setup: setup, claude: kindOf(s.Agent) == AgentClaude, idleStop: idleStop,
		dir: dir, wsChanged: make(chan struct{}, 1),
		log: log, red: secrets.NewRedactor(setup.values),
		sink: newLogSink(s.ID, m.cfg.Store, m.hub, log, &m.storeMu),
		ctx:  ctx, cancel: cancel, done: make(chan struct{}),
		stopReq:       make(chan struct{}),
		suspendReq:    make(chan suspendAsk),
		agentStarted:  make(chan sandbox.Event, 1),
		agentPrepared: make(chan sandbox.Event, 1),
		agentExit:     make(chan sandbox.Event, 1),
		startErr:      make(chan string, 1),
		lastActive:    time.Now(),
	}
}

// requestStop asks the run to stop, once; the first reason wins.
func (r *run) requestStop(reason string) {
	r.stopOnce.Do(func() {
		r.stopMu.Lock()
		r.stopReason = reason
		r.stopMu.Unlock()
		close(r.stopReq)
	})
}

func (r *run) stopRequested() (string, bool) {
	select {
	case <-r.stopReq:
		r.stopMu.Lock()
		defer r.stopMu.Unlock()
		return r.stopReason, true
	default:
		return "", false
	}
}

// kill ends the VM at once.
func (r *run) kill() {
	r.cancel()
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb != nil {
		sb.Kill()
	}
}

// provisionAndRun makes the workspace, then boots and runs.
func (r *run) provisionAndRun(ctx context.Context) error {
	return r.life(ctx, true)
}

// bootAndRun is a restart: the workspace is there.
func (r *run) bootAndRun(ctx context.Context) error {
	return r.life(ctx, false)
}

// life is the session's run here, from its log's opening to its final
// state. What it takes (the log, the network, the watchers of a booted
// VM) is registered on one cleanup stack as it is taken, and given back
// newest first when the run ends, however it ends.
func (r *run) life(ctx context.Context, provision bool) error {
	defer close(r.done)
	var undo cleanups
	defer func() {
		if err := undo.run(); err != nil {
			r.log.Warn("release the session's resources", "err", err)
		}
	}()
	if err := r.sink.open(r.ctx, r.dir); err != nil {
		return r.fail(ctx, err.Error())
	}
	undo.add(r.sink.Close)
	for _, n := range r.envNotes {
		r.systemLine(n)
	}
	if provision {
		for _, n := range r.trustNotes {
			r.systemLine(n)
		}
		if err := r.pullImage(ctx); err != nil {
			return r.fail(ctx, err.Error())
		}
		if err := r.provision(ctx); err != nil {
			return r.fail(ctx, err.Error())
		}
		// A Dockerfile's build reads the workspace disk just made; a
		// prepared environment starts from the image it made.
		if err := r.buildImage(ctx); err != nil {
			return r.fail(ctx, err.Error())
		}
		if err := r.usePrepared(ctx); err != nil {
			return r.fail(ctx, err.Error())
		}
	}
	return r.boot(ctx, &undo)
}

// vmUp reports whether the session's VM is booted and serving.
func (r *run) vmUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sb != nil
}

func (r *run) boot(ctx context.Context, undo *cleanups) error {
	if reason, stop := r.stopRequested(); stop {
		return r.finish(ctx, r.stoppedAs(), reason, nil)
	}
	if r.fromSaved != "" {
		r.systemLine("its disk was gone: continuing from its last saved work, " + r.fromSaved + " (a new clone; not from the commit it started from)")
	}
	what := "booting the VM"
	if r.resumeFrom != "" {
		what = "resuming the VM"
	}
	if _, err := r.m.setState(ctx, r.id, StateBooting, "", what, nil); err != nil {
		return err
	}
	img, err := r.m.cfg.Image(ctx)
	if err != nil {
		return r.fail(ctx, "guest image: "+err.Error())
	}
	base, err := r.baseDisk()
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	root, err := readRootImage(r.dir.RootImage())
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	envDisk, err := r.preparedDisk()
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	for _, n := range r.setup.notes {
		r.systemLine(n)
	}
	opts := sandbox.Options{
		Name: "sandbar-" + r.id, Dir: r.dir.VMDir(), Scratch: r.dir.Scratch(), Console: r.dir.Console(), ConsoleMax: config.ConsoleLogMax,
		CPUs: r.s.Limits.CPUs, Memory: uint64(r.s.Limits.MemoryMiB) << 20,
		ScratchSize:  int64(r.s.Limits.DiskGiB) << 30,
		Workspace:    base,
		Env:          envDisk,
		ReadyTimeout: r.m.cfg.ReadyTimeout,
		OnEvent:      r.onEvent,
		Logger:       r.log,
	}
	if root != nil {
		opts.Root = root.Path
		r.mu.Lock()
		r.root = root
		r.mu.Unlock()
		r.systemLine("environment: the agent's root is the image " + root.label() + "; Sandbar's own tools save its work")
	}
	if r.s.Limits.Network {
		sn, nic, arg, err := r.startNet(ctx)
		if err != nil {
			return r.fail(ctx, "the session's network: "+err.Error())
		}
		r.mu.Lock()
		r.net = sn
		r.mu.Unlock()
		undo.add(func() error {
			r.mu.Lock()
			r.net = nil
			r.mu.Unlock()
			sn.close()
			return nil
		})
		opts.NIC, opts.NICArg = nic, arg
	} else {
		r.systemLine("network: off (no network card)")
	}
	hv, err := r.hypervisor(ctx)
	if err != nil {
		return r.fail(ctx, err.Error())
	}
	var sb *sandbox.Sandbox
	if r.resumeFrom != "" {
		sb, err = r.resumeVM(ctx, hv, img, opts)
	} else {
		if _, ok := hv.(vm.Templater); ok && os.Getenv(EnvTemplates) == "1" {
			// Where the image has a template of this session's shape,
			// the VM starts from it; otherwise it boots, and the log
			// says why.
			opts.Template = sandbox.TemplateDir(img)
		}
		sb, err = sandbox.Boot(ctx, hv, img, opts)
	}
	if err != nil {
		if reason, stop := r.stopRequested(); stop {
			return r.finish(ctx, r.stoppedAs(), reason, nil)
		}
		if r.resumeFrom != "" {
			return r.resumeFailed(ctx, err)
		}
		return r.fail(ctx, "boot the VM: "+err.Error())
	}
	r.mu.Lock()
	r.sb = sb
	r.mu.Unlock()
	r.markUnsaved()
	if r.resumeFrom != "" {
		r.timing(ctx, "resume", sb.ReadyAfter)
		r.systemLine(fmt.Sprintf("VM resumed in %s, its processes where they were", sb.ReadyAfter.Round(time.Millisecond)))
	} else {
		r.timing(ctx, "boot", sb.Booted)
		r.timing(ctx, "ready", sb.ReadyAfter-sb.Booted)
		if sb.TemplateNote != "" {
			r.systemLine(sb.TemplateNote)
		}
		r.systemLine(fmt.Sprintf("VM ready in %s (%s, %d vCPUs, %d MiB)", sb.ReadyAfter.Round(time.Millisecond), sb.Ready.Kernel, sb.Ready.CPUs, sb.Ready.Memory>>20))
	}
	if why := sb.NetError(); why != "" {
		// The guest booted without the network it was given (a DHCP
		// server that never answered, say); the session goes on.
		r.systemLine("network: the VM has no network: " + r.red.Redact(why))
	}

	vmDone := make(chan error, 1)
	go func() { vmDone <- sb.Wait(context.Background()) }()

	if r.restart && r.fromSaved == "" {
		r.adoptAutoCommit(ctx)
	}
	clock := newClockKeeper(r.m.cfg.Clock)
	if r.resumeFrom != "" {
		r.resumed(ctx)
	} else if err := r.startAgent(ctx, vmDone); err != nil {
		saveErr := r.saveBeforeStop()
		r.shutdown()
		if reason, stop := r.stopRequested(); stop {
			return r.finish(ctx, r.stoppedAs(), unsavedReason(reason, saveErr), nil)
		}
		return r.fail(ctx, err.Error())
	}

	stopWatch := make(chan struct{})
	var watching sync.WaitGroup
	watching.Go(func() { r.watchChanges(stopWatch) })
	watching.Go(func() { r.keepClock(stopWatch, clock) })
	watching.Go(func() { r.watchDisk(stopWatch) })
	undo.add(func() error { close(stopWatch); watching.Wait(); return nil })
	r.notifyChanged() // the view starts with the clone as it boots
	return r.supervise(ctx, vmDone)
}

// now is the host's wall clock, as the guest's is kept to.
func (r *run) now() time.Time {
	wall, _ := r.m.cfg.Clock.Now()
	return wall
}

// startAgent sends start and waits for agent:started, then gives the
// agent its prompt.
func (r *run) startAgent(ctx context.Context, vmDone <-chan error) error {
	name, email := workspace.GitIdentity(ctx, r.repo.Root)
	args := r.s.Agent.Args
	if r.claude && r.restart && r.fromSaved == "" { // a new clone has no conversation to continue
		args = append(append([]string{}, args...), "--continue")
	}
	sudo, err := r.m.ProjectSudo(ctx, r.s.ProjectID)
	if err != nil {
		return err
	}
	start := sandbox.AgentStart{
		Branch: r.s.Branch, Command: r.s.Agent.Command, Args: args,
		Env: r.env, Now: r.now(), CACert: r.setup.caPEM,
		GitName: name, GitEmail: email, NoSudo: !sudo, Image: r.image(),
	}
	if err := r.runSetup(ctx, start, vmDone); errors.Is(err, errSetupStopped) {
		return nil // supervise sees the stop
	} else if err != nil {
		return err
	}
	agentStart := time.Now()
	start.Now = r.now()
	if err := r.sb.StartAgent(start); err != nil {
		return err
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case ev := <-r.agentStarted:
		r.mu.Lock()
		r.started = true
		r.mu.Unlock()
		r.timing(ctx, "agent", time.Since(agentStart))
		r.systemLine(fmt.Sprintf("agent started: %s %s (pid %d)", r.s.Agent.Command, strings.Join(args, " "), ev.PID))
		for _, n := range sandbox.StartNotes(ev) {
			r.systemLine("environment: " + r.red.Redact(n))
		}
	case msg := <-r.startErr:
		return fmt.Errorf("start the agent: %s", msg)
	case ev := <-r.agentExit:
		r.agentExit <- ev // supervise reports it
		return nil
	case err := <-vmDone:
		return fmt.Errorf("the VM stopped before the agent started: %v", err)
	case <-timer.C:
		return errors.New("the agent did not start within a minute")
	case <-r.stopReq:
		return nil
	}
	activity, reason := ActivityWorking, "working"
	switch {
	case r.s.Prompt != "" && !r.restart:
		if err := r.chat(r.s.Prompt); err != nil {
			return err
		}
	case r.claude:
		activity, reason = ActivityWaiting, "waiting for your message"
	}
	r.setActivity(ctx, activity, reason)
	return nil
}

// supervise waits for the agent to exit, the VM to die, a stop, a
// timeout or idleness, and ends the session accordingly.
func (r *run) supervise(ctx context.Context, vmDone <-chan error) error {
	var wall <-chan time.Time
	if d := r.s.Limits.Timeout; d > 0 {
		t := time.NewTimer(d - time.Since(r.s.Started))
		defer t.Stop()
		wall = t.C
	}
	var idle <-chan time.Time
	if r.s.Limits.IdleTimeout > 0 {
		t := time.NewTicker(min(r.s.Limits.IdleTimeout/4, 15*time.Second))
		defer t.Stop()
		idle = t.C
	}
	idleFired := false
	for {
		select {
		case ev := <-r.agentExit:
			return r.agentExited(ctx, ev)
		case err := <-vmDone:
			if reason, stop := r.stopRequested(); stop {
				return r.finish(ctx, r.stoppedAs(), reason, nil)
			}
			if errors.Is(err, vm.ErrHostLost) {
				// Its disks are kept on the host: restart continues there.
				return r.finish(ctx, StateInterrupted, err.Error()+"; `sandbar restart "+r.id+"` continues it there", nil)
			}
			msg := "the VM stopped unexpectedly"
			if err != nil {
				msg += ": " + err.Error()
			}
			// Its disk, the agent's work on it, is kept: say how to go
			// on before the console's lines, which are for a developer.
			msg += "; its disk is kept: `sandbar restart " + short(r.id) + "` goes on from where it was"
			if tail := sandbox.ConsoleTail(r.dir.Console(), 10); tail != "" {
				msg += "\nlast console lines:\n" + tail
			}
			return r.fail(ctx, msg)
		case <-r.stopReq:
			return r.stopAgent(ctx, vmDone)
		case ask := <-r.suspendReq:
			if err := r.suspend(); err != nil {
				ask.reply <- err
				continue
			}
			<-vmDone // the VM ended once its state was saved
			err := r.finishSuspended(ctx, ask.reason)
			ask.reply <- nil // once the session reads suspended
			return err
		case <-wall:
			r.requestStop(fmt.Sprintf("timed out after %s", r.s.Limits.Timeout))
		case <-idle:
			r.mu.Lock()
			quiet := time.Since(r.lastActive)
			r.mu.Unlock()
			if quiet < r.s.Limits.IdleTimeout {
				idleFired = false
				continue
			}
			if idleFired {
				continue
			}
			idleFired = true
			reason := fmt.Sprintf("idle for %s", quiet.Round(time.Second))
			if r.idleStop {
				r.requestStop(reason)
			} else {
				r.setActivity(ctx, ActivityWaiting, reason)
			}
		case <-ctx.Done():
			r.shutdown()
			return r.finish(context.Background(), StateStopped, ReasonQuit, nil)
		}
	}
}

// stopAgent stops the agent (SIGTERM, grace, SIGKILL in the guest), then
// the VM.
func (r *run) stopAgent(ctx context.Context, vmDone <-chan error) error {
	reason, _ := r.stopRequested()
	if err := r.pausedErr(); err != nil {
		// The VM waits for room it does not have: nothing in it can
		// answer, so nothing can be saved. Its work stays on the
		// session's disk for a restart once there is room.
		why, _ := r.paused()
		why = strings.TrimPrefix(why, "paused: ")
		r.m.setState(ctx, r.id, StateStopping, "", reason, nil)
		os.WriteFile(r.dir.SaveError(), []byte(why+"\n"), 0o600)
		r.systemLine("the VM is paused on a full disk, so its work cannot be saved now: it stays on the session's disk; free some space and restart the session")
		r.shutdown()
		return r.finish(ctx, r.stoppedAs(), unsavedReason(reason, errors.New(why)), nil)
	}
	r.m.setState(ctx, r.id, StateStopping, "", reason, nil)
	grace := r.m.cfg.StopGrace
	var exit *int
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if !started {
		select {
		case ev := <-r.agentExit: // it started and ended at once
			code := ev.Code
			exit = &code
		default:
		}
	} else if err := r.sb.StopAgent(grace); err == nil {
		select {
		case ev := <-r.agentExit:
			code := ev.Code
			exit = &code
			r.systemLine(fmt.Sprintf("agent exited: %s", describeExit(ev)))
		case <-time.After(grace + 10*time.Second):
			r.systemLine("the agent did not exit after SIGKILL; powering the VM off")
		case <-vmDone:
		}
	}
	saveErr := r.saveBeforeStop()
	r.shutdown()
	return r.finish(ctx, r.stoppedAs(), unsavedReason(reason, saveErr), exit)
}

// agentExited ends the session after the agent exited on its own.
func (r *run) agentExited(ctx context.Context, ev sandbox.Event) error {
	code := ev.Code
	r.systemLine(fmt.Sprintf("agent exited: %s", describeExit(ev)))
	r.m.setState(ctx, r.id, StateStopping, "", "agent exited; saving its work and shutting the VM down", &code)
	saveErr := r.saveBeforeStop()
	r.shutdown()
	if reason, stop := r.stopRequested(); stop {
		return r.finish(ctx, r.stoppedAs(), unsavedReason(reason, saveErr), &code)
	}
	if code == 0 {
		return r.finish(ctx, StateStopped, unsavedReason("agent finished", saveErr), &code)
	}
	if saveErr != nil {
		return r.finish(ctx, StateFailed, unsavedReason("", saveErr), &code)
	}
	return r.finish(ctx, StateFailed, "agent "+describeExit(ev), &code)
}

func describeExit(ev sandbox.Event) string {
	if ev.Signal != "" {
		return fmt.Sprintf("killed by %s (exit %d)", ev.Signal, ev.Code)
	}
	return fmt.Sprintf("exited with code %d", ev.Code)
}

// shutdown stops the VM gracefully, bounded.
func (r *run) shutdown() {
	r.mu.Lock()
	sb := r.sb
	r.mu.Unlock()
	if sb == nil {
		return
	}
	if _, paused := r.paused(); paused {
		sb.Kill() // a paused VM answers nothing: a shutdown would wait its whole deadline
		sb.Wait(context.Background())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := sb.Shutdown(ctx); err != nil {
		r.log.Warn("VM shutdown", "err", err)
	}
	r.timing(context.Background(), "shutdown", time.Since(start))
}

// finish records the final state.
func (r *run) finish(ctx context.Context, state store.State, reason string, exit *int) error {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	r.systemLine(fmt.Sprintf("session %s: %s", state, reason))
	r.sink.flush()
	_, err := r.m.setState(ctx, r.id, state, "", reason, exit)
	return err
}

// fail ends the session as failed with a reason the user can act on.
func (r *run) fail(ctx context.Context, reason string) error {
	r.log.Warn("session failed", "reason", reason)
	return r.finish(ctx, StateFailed, reason, nil)
}

func (r *run) timing(ctx context.Context, name string, d time.Duration) {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	r.m.cfg.Store.UpdateSession(ctx, r.id, func(s *store.Session) error {
		if s.Timings == nil {
			s.Timings = map[string]time.Duration{}
		}
		s.Timings[name] = d
		return nil
	})
	r.m.cfg.Store.AppendEvent(ctx, r.id, store.Event{Time: time.Now(), Kind: "timing", Detail: fmt.Sprintf("%s %s", name, d.Round(time.Millisecond))})
}

func (r *run) setActivity(ctx context.Context, activity, reason string) {
	r.mu.Lock()
	if r.pause != nil {
		// Paused on a full disk: what comes meanwhile is what the
		// session goes back to on resume.
		r.pause.activity, r.pause.reason = activity, reason
		r.mu.Unlock()
		return
	}
	same := r.activity == activity
	switch {
	case activity != ActivityWaiting:
		r.waitingSince = time.Time{}
		r.autoSuspendFailed = false
	case !same || r.waitingSince.IsZero():
		r.waitingSince = r.m.cfg.Now()
	}
	r.activity, r.reason = activity, reason
	used, total := r.memUsed, r.memTotal
	r.mu.Unlock()
	r.adjustBalloon(activity == ActivityWaiting, used, total)
	if same && activity == ActivityWorking {
		return
	}
	r.m.setState(ctx, r.id, StateRunning, activity, reason, nil)
}

// systemLine logs a line of Sandbar's own about the session.
func (r *run) systemLine(text string) { r.sink.line("system", text) }

// addLine records one (already redacted) line (see logSink.line).
func (r *run) addLine(stream, text string) { r.sink.line(stream, text) }

// addEntry records one transcript entry.
func (r *run) addEntry(e Entry) { r.sink.entry(e) }

// image is the configuration of the image the agent's root is, for the
// guest's start; nil on Sandbar's own root.
func (r *run) image() *sandbox.ImageConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root == nil {
		return nil
	}
	return r.root.image()
}

// EnvTemplates set to "1" has sessions start from the image's template
// (sandbox.TemplateDir) where their shape is the template's. It is off
// by default until the whole suite has run with it: in the one full run
// with templates on, the real Claude Code in a session started from one
// was asked for its tool call again and again by the test's scripted API
// (TestClaudeCodeCommitsAndMerges), which then read only the last
// message, while Claude Code sends messages of a "system" role among
// its turns. The script now reads past them; cold boots are what every
// other test and figure ran on.
const EnvTemplates = "SANDBAR_TEMPLATES"
