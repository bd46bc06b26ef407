package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"sandbar/app/cli"
	"sandbar/app/config"
	"sandbar/app/engine"
	"sandbar/app/hosts"
	"sandbar/app/imagebuild"
	"sandbar/app/net/broker"
	"sandbar/app/net/hostproxy"
	"sandbar/app/net/hosttrust"
	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/vm"
	"sandbar/vm/libvirt"
)

// parts are the real parts of one data directory, built once here and
// handed to the command line and the windows alike. Each is made on first
// need (`sandbar version` opens no database) and closed by close, in the
// reverse of the order they were made.
type parts struct {
	paths       config.Paths
	logger      *slog.Logger
	hypervisors *vm.Registry
	backend     string // SANDBAR_HYPERVISOR: "" for the platform's default
	images      *imagebuild.Builder
	// self is the sandbar binary and environ its environment: what a
	// headless engine is started with.
	self    string
	environ []string
	// anthropicUpstream is SANDBAR_ANTHROPIC_UPSTREAM, for the engine.
	anthropicUpstream string
	// proxy is the host's proxy, read once at start; proxyErr says why
	// it could not be, and the Manager is not built then.
	proxy    *hostproxy.Config
	proxyErr error
	// hostTrust finds the certificates this machine trusts beyond the
	// stock bundle (SANDBAR_HOST_CA_DIR replaces its places, for tests).
	hostTrust hosttrust.Source

	// sshAuth is how remote hosts are logged in to: the SSH agent,
	// known_hosts and the person's keys, as ssh finds them.
	sshAuth libvirt.Auth

	mu      sync.Mutex
	hosts   *hosts.Hosts
	st      *store.Store
	sec     *secrets.Secrets
	m       *session.Manager
	cleanup []func(ctx context.Context) error
}

// Store opens the data directory's database, once.
func (p *parts) Store() (*store.Store, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store()
}

func (p *parts) store() (*store.Store, error) {
	if p.st != nil {
		return p.st, nil
	}
	if err := p.paths.Ensure(); err != nil {
		return nil, err
	}
	st, err := store.Open(p.paths.DB())
	if errors.Is(err, store.ErrDiskFull) && os.Remove(p.paths.Reserve()) == nil {
		// The disk is full: the reserve Sandbar keeps for this moment
		// gives SQLite room for its WAL and shared memory.
		st, err = store.Open(p.paths.DB())
	}
	if err != nil {
		return nil, err
	}
	p.st = st
	p.cleanup = append(p.cleanup, func(context.Context) error { return st.Close() })
	return st, nil
}

// Secrets are the named secrets: values in the keyring, names in the
// store.
func (p *parts) Secrets() (*secrets.Secrets, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.secrets()
}

func (p *parts) secrets() (*secrets.Secrets, error) {
	if p.sec != nil {
		return p.sec, nil
	}
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	p.sec = secrets.New(st, secrets.Options{})
	return p.sec, nil
}

// Manager builds the session manager over the data directory, once: the
// store, the keyring, the hypervisor and the guest image (built on first
// need). It runs VMs only in the engine (the GUI, or `sandbar serve`);
// in any other process it answers reads and runs nothing.
func (p *parts) Manager(ctx context.Context) (*session.Manager, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m != nil {
		return p.m, nil
	}
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	sec, err := p.secrets()
	if err != nil {
		return nil, err
	}
	if p.proxyErr != nil {
		return nil, p.proxyErr
	}
	if p.hypervisors == nil {
		return nil, fmt.Errorf("no hypervisor backend is wired into this sandbar: %w", vm.ErrNotFound)
	}
	hv, err := p.hypervisors.Get(p.backend)
	if err != nil {
		return nil, err
	}
	m, err := session.New(ctx, session.Config{
		Paths:             p.paths,
		Store:             st,
		Secrets:           sec,
		CAStore:           caStore{sec.Internal()},
		AnthropicUpstream: p.anthropicUpstream,
		Proxy:             p.proxy,
		HostTrust:         p.hostTrust,
		Hypervisor:        hv,
		Hosts:             p.remoteHosts(st),
		Image:             p.images.Ensure,
		Logger:            p.logger,
	})
	if err != nil {
		return nil, err
	}
	p.m = m
	p.cleanup = append(p.cleanup, m.Close)
	return m, nil
}

// Sessions is the data directory's sessions for a process that may not
// be its engine: reads here, through the Manager, and anything that
// touches a VM through the engine, started when none answers.
func (p *parts) Sessions(ctx context.Context) (session.Service, error) {
	m, err := p.Manager(ctx)
	if err != nil {
		return nil, err
	}
	return p.client(m), nil
}

func (p *parts) client(m *session.Manager) *engine.Client {
	return &engine.Client{Local: m, Engine: p.Engine, Logger: p.logger, KeyringOK: p.keyringOK}
}

// keyringOK checks that this process reaches the keyring, for a client
// whose engine cannot (engine.Client.KeyringOK).
func (p *parts) keyringOK(ctx context.Context) error {
	sec, err := p.Secrets()
	if err != nil {
		return err
	}
	return sec.Check(ctx)
}

// engineStart bounds how long a headless engine may take to answer.
const engineStart = 30 * time.Second

// Engine reaches the data directory's engine, starting a headless one
// (`sandbar serve`) when none answers. An engine that answers in another
// API version is not replaced: the error says which process it is.
func (p *parts) Engine(ctx context.Context) (*engine.Remote, error) {
	// A socket directory that is not the person's alone is refused, not
	// worked around by starting an engine that would refuse it too.
	if err := p.paths.CheckSocketDir(); err != nil {
		return nil, err
	}
	r, err := engine.Dial(ctx, p.paths)
	if err == nil || errors.Is(err, engine.ErrVersion) {
		return r, err
	}
	if p.self == "" {
		return nil, errors.New("find the sandbar binary to start the engine: it is not known")
	}
	if err := p.paths.Ensure(); err != nil {
		return nil, err
	}
	logPath := p.paths.EngineLog()
	logF, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logF.Close()
	cmd := exec.Command(p.self, "serve")
	cmd.Env = p.environ
	cmd.Dir = p.paths.Home // not the caller's folder, which the engine may outlive
	cmd.Stdout, cmd.Stderr = logF, logF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the Sandbar engine: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(engineStart)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := engine.Dial(ctx, p.paths)
		if err == nil || errors.Is(err, engine.ErrVersion) {
			return r, err
		}
		select {
		case err := <-exited:
			// Another engine may have won the race to start: then
			// serve exits 0, and that engine answers.
			r, derr := engine.Dial(ctx, p.paths)
			if derr == nil || errors.Is(derr, engine.ErrVersion) {
				return r, derr
			}
			if err == nil {
				return nil, fmt.Errorf("another Sandbar engine started meanwhile, but it does not answer (%v): see %s", derr, logPath)
			}
			return nil, fmt.Errorf("the Sandbar engine exited at start (%v): see %s", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("the Sandbar engine did not answer within %s: see %s", engineStart, logPath)
		case <-tick.C:
		}
	}
}

// close closes what was made, the last made first.
func (p *parts) close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		errs = append(errs, p.cleanup[i](ctx))
	}
	p.cleanup = nil
	return errors.Join(errs...)
}

// cliEnv is the command line's view of the parts.
func (p *parts) cliEnv(env *cli.Env) *cli.Env {
	env.Paths = p.paths
	env.Logger = p.logger
	env.Hypervisors = p.hypervisors
	env.Backend = p.backend
	env.Images = p.images
	env.Store = p.Store
	env.Secrets = p.Secrets
	env.Sessions = p.Sessions
	env.Manager = p.Manager
	env.Hosts = p.Hosts
	return env
}

// Hosts is the data directory's remote hosts, made once.
func (p *parts) Hosts() (*hosts.Hosts, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	return p.remoteHosts(st), nil
}

// remoteHosts is p.hosts, made on first need; p.mu is held.
func (p *parts) remoteHosts(st *store.Store) *hosts.Hosts {
	if p.hosts == nil {
		me, _ := os.Hostname()
		p.hosts = hosts.New(st, hosts.Config{Auth: p.sshAuth, Owner: fmt.Sprintf("%s pid %d", me, os.Getpid()), Logger: p.logger})
	}
	return p.hosts
}

// sshAuth is ssh's way of logging in, from this process's environment.
func sshAuth() libvirt.Auth {
	home, _ := os.UserHomeDir()
	return libvirt.DefaultAuth(home, os.Getenv("SSH_AUTH_SOCK"))
}

// caStore keeps the credential broker's CA among Sandbar's own keyring
// items.
type caStore struct{ k secrets.Internal }

func (c caStore) Get(ctx context.Context, name string) (string, error) {
	v, err := c.k.Get(ctx, name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", broker.ErrNotFound, err)
	}
	return v, err
}

func (c caStore) Set(ctx context.Context, name, value string) error { return c.k.Set(ctx, name, value) }
