package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"sandbar/guest/protocol"
)

// agentProc is the one agent process of a session.
type agentProc struct {
	*child
	chat chan []byte   // lines for stdin, in order
	done chan struct{} // closed after agent:exit is queued
}

// terminate sends SIGTERM, waits up to grace for the exit, then SIGKILL.
// It returns once the process is reaped.
func (a *agentProc) terminate(grace time.Duration) {
	a.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-a.exited:
		return
	case <-t.C:
	}
	a.signal(syscall.SIGKILL)
	<-a.exited
}

func (a *agentProc) running() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// user returns the account name should run as, creating it if need be.
func (s *session) user(name string) (User, error) {
	if name == "" {
		name = protocol.UserAgent
	}
	s.mu.Lock()
	u, ok := s.users[name]
	s.mu.Unlock()
	if ok {
		return u, nil
	}
	uid, home := agentUID(s.cfg.Workspace), "/home/agent"
	if name == protocol.UserRoot {
		uid, home = 0, "/root"
	}
	var err error
	if name == protocol.UserAgent && s.cfg.ToolRoot != "" {
		// An exec before the first start: the account start would
		// choose, its notes left for start to give.
		s.mu.Lock()
		im := s.image
		s.mu.Unlock()
		u, _, err = s.imageAgent(uid, im)
	} else {
		u, err = s.cfg.Sys.EnsureUser(name, uid, home)
	}
	if err != nil {
		return User{}, fmt.Errorf("set up user %s: %w", name, err)
	}
	s.mu.Lock()
	s.users[name] = u
	s.mu.Unlock()
	return u, nil
}

// defaultAgentUID is the agent user's uid when the workspace does not say.
const defaultAgentUID = 1000

// agentUID is the uid the agent user gets: the owner of the workspace when
// it is an ordinary user, so the agent can write the host's clone through
// the share (virtio-fs and 9p show host owners as they are; this is what
// Lima does with the host uid), else 1000. A workspace owned by root (a
// host running Sandbar as root) or by nobody keeps 1000.
func agentUID(workspace string) int {
	var st syscall.Stat_t
	if err := syscall.Stat(workspace, &st); err != nil {
		return defaultAgentUID
	}
	if st.Uid == 0 || st.Uid >= 65534 {
		return defaultAgentUID
	}
	return int(st.Uid)
}

func (s *session) start(ctx context.Context, c protocol.Command) {
	s.mu.Lock()
	busy := s.agent != nil && s.agent.running()
	s.mu.Unlock()
	if busy {
		s.replyErr(c, "an agent is already running: send stop and wait for agent:exit before starting another")
		return
	}
	if t, ok := c.WallTime(); ok {
		if err := s.cfg.Sys.SetTime(t); err != nil {
			s.log.Warn("cannot set the guest clock", "err", err)
		}
	}
	workdir := c.Workdir
	if workdir == "" {
		workdir = s.cfg.Workspace
	}
	var notes []string
	if s.cfg.ToolRoot != "" {
		// On an image's root: refused before anything is written when
		// the image cannot run the agent.
		if err := checkLibc("/", runtime.GOARCH); err != nil {
			s.replyErr(c, "%v", err)
			return
		}
	}
	s.mu.Lock()
	s.image = c.Image
	s.mu.Unlock()
	var u User
	var err error
	if s.cfg.ToolRoot != "" && (c.Agent.User == "" || c.Agent.User == protocol.UserAgent) {
		u, notes, err = s.imageAgent(agentUID(s.cfg.Workspace), c.Image)
		if err == nil {
			s.mu.Lock()
			s.users[protocol.UserAgent] = u
			s.mu.Unlock()
		}
	} else {
		u, err = s.user(c.Agent.User)
	}
	if err != nil {
		s.replyErr(c, "%v", err)
		return
	}
	if im := c.Image; im != nil && im.WorkingDir != "" && im.WorkingDir != "/" && filepath.Clean(im.WorkingDir) != filepath.Clean(workdir) {
		notes = append(notes, fmt.Sprintf("the image's working directory %s is not used: the agent works in the repository at %s", im.WorkingDir, workdir))
	}
	if err := writeGitConfig(u, c.Git, workdir, s.cfg.Workspace); err != nil {
		s.replyErr(c, "%v", err)
		return
	}
	trust, err := s.trustCA(c)
	if err != nil {
		s.replyErr(c, "%v", err)
		return
	}
	sudo := !c.NoSudo
	if sudo && s.cfg.ToolRoot != "" && s.cfg.SudoersFile != "" && u.UID != 0 {
		if ok, why := imageSudo("/"); !ok {
			notes = append(notes, why)
			sudo = false
		}
	}
	if err := s.setSudo(u, sudo); err != nil {
		s.replyErr(c, "%v", err)
		return
	}
	imgEnv := imageEnv(c.Image)
	env := mergeEnv(baseEnv(u), imgEnv, trust, c.Env)
	if c.Branch != "" {
		if err := checkout(ctx, u, s.toolEnv(u, trust, nil), workdir, c.Branch, s.cfg.ToolRoot); err != nil {
			s.replyErr(c, "%v", err)
			return
		}
	}
	if c.Prepare {
		s.mu.Lock()
		s.env, s.imageEnv, s.workdir = c.Env, imgEnv, workdir
		s.mu.Unlock()
		s.log.Info("agent prepared", "user", u.Name, "workdir", workdir)
		s.emit(protocol.Event{Ev: protocol.EvAgentPrepared, ID: c.ID})
		return
	}
	argv := append([]string{c.Agent.Command}, c.Agent.Args...)
	ch, err := spawn(spawnSpec{argv: argv, env: env, dir: workdir, user: u, stdin: true})
	if err != nil {
		s.replyErr(c, "start the agent %s: %v", c.Agent.Command, err)
		return
	}
	a := &agentProc{child: ch, chat: make(chan []byte, 64), done: make(chan struct{})}
	s.mu.Lock()
	s.agent, s.env, s.imageEnv, s.workdir = a, c.Env, imgEnv, workdir
	startStats := !s.stats
	s.stats = true
	startWatch := !s.watch
	s.watch = true
	startPorts := !s.ports && s.cfg.GuestIP.IsValid()
	s.ports = s.ports || startPorts
	s.mu.Unlock()
	for _, n := range notes {
		s.log.Info(n)
	}
	s.log.Info("agent started", "pid", ch.cmd.Process.Pid, "user", u.Name, "workdir", workdir)
	s.emit(protocol.Event{Ev: protocol.EvAgentStarted, ID: c.ID, PID: ch.cmd.Process.Pid, Notes: clipNotes(notes)})
	s.wg.Go(func() { s.runAgent(a) })
	if startStats {
		interval := time.Duration(c.StatsInterval) * time.Millisecond
		if interval <= 0 {
			interval = protocol.DefaultStatsInterval * time.Millisecond
		}
		s.wg.Go(func() { s.statsLoop(interval) })
	}
	if startWatch {
		s.wg.Go(func() { s.watchWorkspace(workdir) })
	}
	if startPorts {
		s.wg.Go(func() { s.watchPorts(s.cfg.GuestIP, s.cfg.PortsInterval) })
	}
}

// trustCA installs start's ca_cert and returns the environment that
// points tools at it, which execs get too from then on. A start without
// one keeps what an earlier start of this boot installed: the CA stays
// trusted for the rest of the boot; what an earlier boot installed on the
// same disk is taken back.
func (s *session) trustCA(c protocol.Command) (map[string]string, error) {
	s.mu.Lock()
	prev := s.caEnv
	s.mu.Unlock()
	if c.CACert == "" {
		if prev == nil && s.cfg.CABundle != "" && s.cfg.CAFile != "" {
			// The root's changes outlive a boot (a restart boots the
			// same scratch disk): trust an earlier boot's start added,
			// which this session's host no longer sends (turned off in
			// its settings), is taken back.
			removed, err := removeCA(s.cfg.CABundle, s.cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("take back the CA certificates an earlier boot trusted: %w", err)
			}
			if removed {
				s.log.Info("the CA certificates an earlier boot added are no longer trusted", "bundle", s.cfg.CABundle)
				if _, err := s.cfg.JVM.install(s.life, nil); err != nil {
					s.log.Warn("the JVM's trust store keeps CA certificates an earlier boot added", "err", err)
				}
			}
		}
		return prev, nil
	}
	if s.cfg.CABundle == "" || s.cfg.CAFile == "" {
		s.log.Warn("start carries a ca_cert but this supervisor has no CA bundle configured; the CA is not trusted")
		return prev, nil
	}
	if err := installCA(s.cfg.CABundle, s.cfg.CAFile, c.CACert); err != nil {
		return nil, fmt.Errorf("trust Sandbar's CA: %w", err)
	}
	s.log.Info("the start's CA certificates added to the trusted certificates", "bundle", s.cfg.CABundle)
	if blocks, err := protocol.ParseCACert(c.CACert); err == nil {
		// The JVM's trust is a courtesy: a keytool that fails is logged,
		// and the start goes on with every other tool's trust in place.
		if n, err := s.cfg.JVM.install(s.life, blocks); err != nil {
			s.log.Warn("the JVM's trust store did not take every CA certificate", "err", err)
		} else if n > 0 {
			s.log.Info("CA certificates added to the JVM's trust store", "added", n)
		}
	}
	env := caEnv(s.cfg.CABundle, s.cfg.CAFile)
	s.mu.Lock()
	s.caEnv = env // execs get it from now on, whether or not the agent starts
	s.mu.Unlock()
	return env, nil
}

// runAgent owns the agent's pipes and reports its exit after its output.
func (s *session) runAgent(a *agentProc) {
	var pipes sync.WaitGroup
	pipes.Go(func() { s.pumpLines(a.stdout, a.exited, protocol.EvAgentStdout) })
	pipes.Go(func() { s.pumpLines(a.stderr, a.exited, protocol.EvAgentStderr) })
	// Its tools' live output, whose last events come before agent:exit.
	pipes.Go(func() { s.watchTools(a) })
	pipes.Go(func() {
		for {
			select {
			case line := <-a.chat:
				if _, err := a.stdin.Write(line); err != nil {
					s.log.Warn("cannot write to the agent's stdin", "err", err)
				}
			case <-a.exited:
				return
			}
		}
	})
	err := a.cmd.Wait()
	close(a.exited)
	// The session's work is over: take the agent's helpers with it, which
	// also lets its pipes reach EOF.
	killGroup(a.pgid, syscall.SIGKILL)
	stopWaiting(a.stdout, a.stderr)
	a.stdin.Close() // unblocks a write the agent will never read
	pipes.Wait()
	code, sig := exitStatus(a.cmd.ProcessState)
	s.log.Info("agent exited", "code", code, "signal", sig, "wait", err)
	// Under the lock, so that once the host has seen agent:exit a stop or
	// chat finds no agent, and a new start's events come after it.
	s.mu.Lock()
	close(a.done)
	s.emit(protocol.Event{Ev: protocol.EvAgentExit, Code: code, Signal: sig})
	s.mu.Unlock()
}

func (s *session) runningAgent() *agentProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent != nil && s.agent.running() {
		return s.agent
	}
	return nil
}

func (s *session) chat(c protocol.Command) {
	a := s.runningAgent()
	if a == nil {
		s.replyErr(c, "no agent is running: send start first")
		return
	}
	text := c.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	select {
	case a.chat <- []byte(text):
	case <-a.exited:
		s.replyErr(c, "the agent has exited; its input is closed")
	default:
		s.replyErr(c, "the agent is not reading its input (64 messages waiting): try again later or stop it")
	}
}

func (s *session) stop(c protocol.Command) {
	a := s.runningAgent()
	if a == nil {
		s.replyErr(c, "no agent is running")
		return
	}
	grace := time.Duration(c.Grace) * time.Millisecond
	if grace == 0 {
		grace = defaultGrace
	}
	s.log.Info("stopping the agent", "grace", grace)
	s.wg.Go(func() { a.terminate(grace) })
}

// interrupt sends SIGINT to the agent's process group, as Ctrl-C at a
// terminal would: the agent runs without one, so its tools share its
// group, and the signal reaches the running tool and the agent alike.
func (s *session) interrupt(c protocol.Command) {
	a := s.runningAgent()
	if a == nil {
		s.replyErr(c, "no agent is running: there is nothing to interrupt")
		return
	}
	s.log.Info("interrupting the agent", "pgid", a.pgid)
	killGroup(a.pgid, syscall.SIGINT)
}

// checkout switches workdir to branch, as the agent user, with git from
// root (Sandbar's own, see Config.ToolRoot; "" is the root itself).
func checkout(ctx context.Context, u User, env map[string]string, workdir, branch, root string) error {
	if strings.HasPrefix(branch, "-") {
		return fmt.Errorf("branch %q starts with '-': pass a branch name", branch)
	}
	// Usually the host cloned onto the branch already: then there is
	// nothing to do, and git (slow to start under emulation, over the
	// share) need not run.
	if head, err := os.ReadFile(filepath.Join(workdir, ".git", "HEAD")); err == nil &&
		strings.TrimSpace(string(head)) == "ref: refs/heads/"+branch {
		return nil
	}
	path, err := lookPathIn(root, "git", env["PATH"])
	if err != nil {
		return fmt.Errorf("check out %s: %w", branch, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// A new session's clone sits detached at its base (the base disk is
	// shared by every session at that commit): the branch is made here.
	args := []string{"checkout", "-q", branch, "--"}
	if !hasBranch(workdir, branch) {
		args = []string{"checkout", "-q", "-b", branch}
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = workdir, envList(env)
	cmd.SysProcAttr = sysProcAttr(u)
	if root != "" {
		cmd.SysProcAttr.Chroot = root
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return fmt.Errorf("git checkout %s in %s failed (%v): %s", branch, workdir, err, msg)
	}
	return nil
}

// hasBranch reports whether the clone at workdir has branch, loose or
// packed.
func hasBranch(workdir, branch string) bool {
	if _, err := os.Stat(filepath.Join(workdir, ".git", "refs", "heads", filepath.FromSlash(branch))); err == nil {
		return true
	}
	packed, err := os.ReadFile(filepath.Join(workdir, ".git", "packed-refs"))
	return err == nil && strings.Contains(string(packed), " refs/heads/"+branch+"\n")
}
