package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/prepared"
	"sandbar/app/net/broker"
	"sandbar/app/net/netstack"
	"sandbar/app/net/policy"
	"sandbar/app/sandbox"
	"sandbar/app/store"
	"sandbar/vm"
)

// The preparing machine: a VM like a session's (the environment's
// image, the workspace at the commit, the project's network rules) that
// runs no agent. It runs Sandbar's own preparing steps, the features'
// installs and onCreateCommand, updateContentCommand, postCreateCommand,
// lists the workspace's ignored files for the capture, and powers off;
// sandbox.Capture turns its scratch disk into the environment's disk.
// Its log (prepare.log) is the commands' output, each line as the guest
// wrote it: the guest's bytes, escaped by whoever shows them.

// prepareDisk is the size of the preparing machine's scratch disk and of
// the environment's disk (both sparse).
const prepareDisk = 16 << 30

// maxPrepareLog bounds a preparation's log; past it, lines are dropped
// and the log says so.
const maxPrepareLog = 32 << 20

// maxIgnoredList bounds the list of the workspace's ignored paths the
// capture reads (as guest/cmd/sandbar-init/prepared.go does).
const maxIgnoredList = 16 << 20

// keepIgnoredList lists the workspace's ignored paths with Sandbar's own
// git (an image may have none), then leaves the list where the capture
// reads it, /.sandbar-prepare/ignored on the image's root: the list
// crosses the host, bounded, because Sandbar's tools run in a root of
// their own.
func keepIgnoredList(ctx context.Context, sb *sandbox.Sandbox, log *prepLog) error {
	list := &boundedBuffer{max: maxIgnoredList}
	errb := &boundedBuffer{max: 4096}
	res, err := sb.Client.Exec(ctx, sandbox.ExecRequest{
		Argv:  []string{"git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"},
		Tools: true, Timeout: 5 * time.Minute,
	}, list, errb)
	switch {
	case err != nil:
		return fmt.Errorf("list the workspace's ignored files: %w", err)
	case list.over:
		return fmt.Errorf("the workspace's ignored files make a list over %d MiB: the prepared environment cannot keep them", maxIgnoredList>>20)
	case res.Code != 0:
		return fmt.Errorf("list the workspace's ignored files: git exited %d: %s", res.Code, strings.TrimSpace(lastLine(errb.String())))
	}
	return prepStep(ctx, sb, SetupStep{Name: "keep the list of the workspace's ignored files", User: "root", Timeout: 5 * time.Minute,
		Argv:  []string{"sh", "-c", `mkdir -p /.sandbar-prepare && cat > /.sandbar-prepare/ignored`},
		Stdin: list.Bytes(), Done: fmt.Sprintf("listed %d ignored paths of the workspace", bytes.Count(list.Bytes(), []byte{0}))}, log, "")
}

// prepLog is a preparation's log file, bounded, with the tail of the
// step running kept for its error.
type prepLog struct {
	mu      sync.Mutex
	f       *os.File
	written int64
	cut     bool
}

func (l *prepLog) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return
	}
	if l.written+int64(len(s))+1 > maxPrepareLog {
		l.cut = true
		s = fmt.Sprintf("(the log is over %d MiB: the rest is left out)", maxPrepareLog>>20)
	}
	n, _ := fmt.Fprintln(l.f, s)
	l.written += int64(n)
}

// stepOutput is one step's output into the log, a line at a time, with
// its tail kept.
type stepOutput struct {
	log     *prepLog
	prefix  string
	partial []byte
	tail    boundedTail
}

func (w *stepOutput) Write(p []byte) (int, error) {
	n := len(p)
	w.tail.write(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n") // not string(p): a copy of the rest per line
		if i < 0 {
			room := maxSetupLine - len(w.partial)
			w.partial = append(w.partial, p[:min(room, len(p))]...)
			if room <= len(p) {
				w.flush()
			}
			break
		}
		w.partial = append(w.partial, p[:min(i, maxSetupLine-len(w.partial))]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (w *stepOutput) flush() {
	if len(w.partial) == 0 {
		return
	}
	w.log.line(w.prefix + strings.ToValidUTF8(string(w.partial), "?"))
	w.partial = w.partial[:0]
}

// runPreparation makes job's environment: it returns the ready one, or
// the error the failed one records (its log kept).
func (m *Manager) runPreparation(ctx context.Context, job prepJob, p *preparation) (prepared.Env, error) {
	st := m.preparedStore()
	b, err := st.Begin(envName(job.project.ID), job.key)
	if err != nil {
		return prepared.Env{}, err
	}
	began := time.Now()
	meta := prepared.Env{BaseKey: job.baseKey, Commit: job.commit, Origin: job.origin()}
	if job.root != nil {
		meta.Image, meta.ImageDigest = job.root.Name, job.root.Digest
	}
	f, err := os.OpenFile(b.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Abandon()
		return prepared.Env{}, err
	}
	defer f.Close()
	log := &prepLog{f: f}
	p.mu.Lock()
	p.log = b.LogPath()
	p.mu.Unlock()
	step := func(s string) {
		p.setStep(s)
		log.line("== " + s)
		b.SetProgress(prepared.Progress{BaseKey: job.baseKey, Commit: job.commit, Step: s, Started: began})
	}
	step("starting the preparing machine")
	log.line(fmt.Sprintf("preparing the environment of %s (%s) for project %s on %s: key %s", job.cfg.File, imageWords(job.root), job.project.Name, short(job.commit), shortKey(job.key)))
	setupTook, captured, err := m.prepareMachine(ctx, job, b, log, step)
	// What the machines left is no part of the environment.
	for _, name := range []string{"vm", "capture", sandbox.ScratchFile} {
		os.RemoveAll(filepath.Join(b.Dir(), name))
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			b.Abandon() // Sandbar quit: nothing failed
			return prepared.Env{}, err
		}
		log.line("== failed: " + err.Error())
		e, ferr := b.Fail(meta, err)
		if ferr != nil {
			return prepared.Env{}, errors.Join(err, ferr)
		}
		return e, err
	}
	meta.Took, meta.SetupTook, meta.Files, meta.Bytes = time.Since(began), setupTook, captured.Files, captured.Bytes
	log.line(fmt.Sprintf("== ready: %d files, %d MB captured; %s in all, %s of it the environment's own steps", captured.Files, captured.Bytes>>20, meta.Took.Round(time.Second), setupTook.Round(time.Second)))
	return b.Finish(meta)
}

func imageWords(root *RootImage) string {
	if root == nil {
		return "Sandbar's own image"
	}
	return "image " + root.label()
}

// prepareMachine boots the preparing machine, runs the environment's
// steps in it, powers it off and captures its disk into b.
func (m *Manager) prepareMachine(ctx context.Context, job prepJob, b *prepared.Build, log *prepLog, step func(string)) (time.Duration, sandbox.Captured, error) {
	img, err := m.cfg.Image(ctx)
	if err != nil {
		return 0, sandbox.Captured{}, fmt.Errorf("guest image: %w", err)
	}
	ready := make(chan string, 1) // "" when the user is ready, else the guest's error
	opts := sandbox.Options{
		Name: "sandbar-prepare-" + shortKey(job.key), Dir: filepath.Join(b.Dir(), "vm"),
		Scratch: filepath.Join(b.Dir(), sandbox.ScratchFile), ScratchSize: prepareDisk,
		CPUs: job.cpus, Memory: uint64(job.memMiB) << 20, Workspace: job.base, ReadyTimeout: m.cfg.ReadyTimeout,
		Logger: m.log.With("prepare", shortKey(job.key)),
		OnEvent: func(ev sandbox.Event) {
			switch ev.Ev {
			case sandbox.EvAgentPrepared:
				select {
				case ready <- "":
				default:
				}
			case sandbox.EvError:
				select {
				case ready <- ev.Message:
				default:
				}
			}
		},
	}
	if job.root != nil {
		opts.Root = job.root.Path
	}
	pn, err := m.prepNet(ctx, job, log)
	if err != nil {
		return 0, sandbox.Captured{}, fmt.Errorf("the preparing machine's network: %w", err)
	}
	defer pn.close()
	opts.NIC, opts.NICArg = pn.nic, pn.arg
	sb, err := sandbox.Boot(ctx, m.cfg.Hypervisor, img, opts)
	if err != nil {
		return 0, sandbox.Captured{}, fmt.Errorf("boot the preparing machine: %w", err)
	}
	defer sb.Kill()
	log.line(fmt.Sprintf("machine ready in %s", sb.ReadyAfter.Round(time.Millisecond)))

	// Command is never started: a prepare asks for all a start does but
	// the agent, and the guest checks the start as a whole.
	start := sandbox.AgentStart{Branch: "sandbar/prepare", Command: "true", Env: job.env, Now: time.Now(), CACert: pn.caPEM,
		GitName: "Sandbar", GitEmail: "sandbar@localhost"}
	if job.root != nil {
		start.Image = job.root.image()
	}
	if sudo, err := m.ProjectSudo(ctx, job.project.ID); err == nil {
		start.NoSudo = !sudo
	}
	if err := sb.PrepareAgent(start); err != nil {
		return 0, sandbox.Captured{}, err
	}
	select {
	case msg := <-ready:
		if msg != "" {
			return 0, sandbox.Captured{}, fmt.Errorf("prepare the agent's user: %s", msg)
		}
	case <-time.After(time.Minute):
		return 0, sandbox.Captured{}, errors.New("the guest did not prepare the agent's user within a minute")
	case <-ctx.Done():
		return 0, sandbox.Captured{}, ctx.Err()
	}

	stages := prepareStages(job.cfg, job.env, job.feats)
	setupBegan := time.Now()
	for _, stage := range stages {
		names := make([]string, len(stage))
		for i, s := range stage {
			names[i] = s.Name
		}
		step("running " + strings.Join(names, ", "))
		errs := make([]error, len(stage))
		var wg sync.WaitGroup
		for i, s := range stage {
			prefix := ""
			if len(stage) > 1 {
				prefix = "[" + s.Name + "] "
			}
			wg.Go(func() { errs[i] = prepStep(ctx, sb, s, log, prefix) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, sandbox.Captured{}, err
		}
	}
	setupTook := time.Since(setupBegan)
	step("listing the workspace's ignored files")
	if err := keepIgnoredList(ctx, sb, log); err != nil {
		return 0, sandbox.Captured{}, err
	}
	step("powering the preparing machine off")
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = sb.Shutdown(sctx)
	cancel()
	if err != nil {
		return 0, sandbox.Captured{}, fmt.Errorf("power the preparing machine off: %w", err)
	}
	step("capturing the environment's disk")
	c, err := sandbox.Capture(ctx, m.cfg.Hypervisor, img, sandbox.CaptureOptions{
		Dir: filepath.Join(b.Dir(), "capture"), Scratch: opts.Scratch, Out: b.Disk(), Size: prepareDisk})
	if err != nil {
		return 0, sandbox.Captured{}, err
	}
	return setupTook, c, nil
}

// prepareStages is what the preparing machine runs: Sandbar's preparing
// steps, the features' installs, then onCreateCommand,
// updateContentCommand and postCreateCommand (postStartCommand is each
// session's).
func prepareStages(cfg *devcontainer.Config, env map[string]string, feats *featureSet) [][]SetupStep {
	var featStages [][]SetupStep
	if feats != nil {
		featStages = feats.Stages
	}
	stages := environmentSetup(cfg, env, false)
	if !cfg.PostStartCommand.IsZero() {
		stages = stages[:len(stages)-1]
	}
	return withFeatures(stages, cfg, featStages)
}

// sessionOnPrepared is what a session booting on a prepared environment
// runs before its agent: Sandbar's preparing steps (a tmpfs is mounted
// each boot), updateContentCommand when the environment was prepared on
// another commit, then postStartCommand.
func sessionOnPrepared(cfg *devcontainer.Config, env map[string]string, update bool) [][]SetupStep {
	c := *cfg
	c.OnCreateCommand, c.PostCreateCommand = devcontainer.Command{}, devcontainer.Command{}
	if !update {
		c.UpdateContentCommand = devcontainer.Command{}
	}
	return environmentSetup(&c, env, false)
}

// prepStep runs one step in the preparing machine, its output to the
// log; a failure names the step, its exit code and its output's tail.
func prepStep(ctx context.Context, sb *sandbox.Sandbox, st SetupStep, log *prepLog, prefix string) error {
	timeout := st.Timeout
	if timeout <= 0 {
		timeout = setupTimeout
	}
	log.line("$ " + st.Name + ": " + strings.Join(st.Argv, " "))
	out := &stepOutput{log: log, prefix: prefix, tail: boundedTail{max: setupTail}}
	began := time.Now()
	res, err := execStreamed(ctx, sb.Client, sandbox.ExecRequest{Argv: st.Argv, Cwd: st.Cwd, Env: st.Env, User: st.User, Timeout: timeout, Stdin: st.Stdin}, out)
	out.flush()
	took := time.Since(began).Round(time.Millisecond)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s could not run: %v", ErrSetupFailed, st.Name, err)
	case res.TimedOut:
		return fmt.Errorf("%w: %s ran past %s and was stopped; its output ended with: %s", ErrSetupFailed, st.Name, timeout, out.tail.text())
	case res.Code != 0:
		return fmt.Errorf("%w: %s exited %d after %s; its output ended with: %s", ErrSetupFailed, st.Name, res.Code, took, out.tail.text())
	}
	done := st.Done
	if done == "" {
		done = st.Name + " done"
	}
	log.line(fmt.Sprintf("%s in %s", done, took))
	return nil
}

// prepNetwork is the preparing machine's network: the project's rules
// (Sandbar's, the project's and the repository's trusted file, as a
// session of the project has them before rules of its own), its
// denials in the preparation's log. No secret of the person's is
// brokered: the hosts allowed for reads only go through the broker,
// which refuses their writes, as in a session.
type prepNetwork struct {
	n     *netstack.Network
	nic   *vm.NIC
	arg   string
	caPEM string
	guest *os.File
	done  sync.WaitGroup
}

func (pn *prepNetwork) close() {
	pn.n.Close()
	pn.guest.Close()
	pn.done.Wait()
}

func (m *Manager) prepNet(ctx context.Context, job prepJob, log *prepLog) (*prepNetwork, error) {
	pol, notes, err := m.projectPolicy(ctx, job.project.ID, job.repoRules)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		log.line("network: " + n)
	}
	var icpt *broker.Interceptor
	pn := &prepNetwork{}
	if m.cfg.CAStore != nil {
		if ca, err := broker.LoadOrCreateCA(ctx, m.cfg.CAStore); err == nil {
			icpt = &broker.Interceptor{CA: ca, RootCAs: m.cfg.UpstreamRoots, Logger: m.log}
			a := &agentSetup{caPEM: string(ca.CertPEM())}
			m.hostCAs(ctx, a)
			pn.caPEM = a.caPEM
		} else {
			log.line(fmt.Sprintf("network: Sandbar's CA is not at hand (%v): the hosts allowed for reads only are closed to the preparing machine", err))
		}
	}
	mac := sessionMAC("prepare-" + job.key)
	n, err := netstack.New(netstack.Config{
		Decide: func(d netstack.Dest) netstack.Verdict {
			dec := pol.Decide(policy.Dest{Name: d.Name, Addr: d.Addr, Port: d.Port, Proto: policy.Proto(d.Proto)})
			return netstack.Verdict{Allow: dec.Allow, Reason: dec.Reason, ReadOnly: dec.ReadOnly}
		},
		OnAttempt: func(a netstack.Attempt) {
			if !a.Verdict.Allow {
				log.line(fmt.Sprintf("network: denied %s: %s", a.Dest, a.Verdict.Reason))
			}
		},
		Resolve: func(ctx context.Context, name string) ([]netip.Addr, error) {
			if a, ok := pol.Hosts()[name]; ok {
				return []netip.Addr{a}, nil
			}
			return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
		},
		Dial:  m.cfg.NetDial,
		Proxy: m.cfg.Proxy,
		Intercept: func(d netstack.Dest, v netstack.Verdict) netstack.Interceptor {
			if icpt == nil || !v.ReadOnly || d.Proto != netstack.TCP {
				return nil
			}
			host := d.Name
			if host == "" {
				host = d.Addr.String()
			}
			t := broker.Target{Host: host, Port: d.Port, ReadOnly: true,
				HowToAllow: "add an allow rule with write for " + writeTarget(host, d.Port) + " to the project's network settings."}
			return func(ctx context.Context, guest net.Conn, dial func(context.Context) (net.Conn, error)) {
				t.Dial = dial
				icpt.Serve(ctx, guest, t)
			}
		},
		GuestMAC: mac,
		Origin:   netstack.OriginLabel("prepare-" + shortKey(job.key)),
		Logger:   m.log.With("part", "prepare-network"),
	})
	if err != nil {
		return nil, err
	}
	host, guest, framing, err := sandbox.NICPair(m.cfg.Hypervisor)
	if err != nil {
		n.Close()
		return nil, err
	}
	pn.n, pn.guest = n, guest
	pn.done.Go(func() {
		if err := n.Serve(context.Background(), host, netstack.Framing(framing)); err != nil {
			m.log.Debug("the preparing machine's network link ended", "err", err)
		}
	})
	g := n.Guest()
	pn.nic, pn.arg = &vm.NIC{File: guest, MAC: mac, MTU: g.MTU}, g.KernelArg()
	log.line(fmt.Sprintf("network: %s", describeMode(pol.Mode())))
	return pn, nil
}

// projectPolicy is the network policy a new session of the project gets
// in its default mode, before rules of its own: Sandbar's settings, the
// project's, and the repository's trusted network file.
func (m *Manager) projectPolicy(ctx context.Context, projectID int64, repoRules []byte) (*policy.Policy, []string, error) {
	return m.composeLayers(ctx, store.Limits{Network: true}, projectID, repoRules, "")
}
