package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"sandbar/app/imagebuild"
	"sandbar/app/net/broker"
	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/store"
)

// openStore opens the data directory's database.
func openStore(env *Env) (*store.Store, error) {
	if err := env.Paths.Ensure(); err != nil {
		return nil, err
	}
	return store.Open(filepath.Join(env.Paths.Home, "sandbar.db"))
}

// OpenManager builds the real session manager over env's data directory:
// the store, the keyring, the platform's hypervisor and the guest image
// (built on first need). The GUI and `sandbar serve` run it.
func OpenManager(ctx context.Context, env *Env) (*session.Manager, *store.Store, error) {
	st, err := openStore(env)
	if err != nil {
		return nil, nil, err
	}
	hv, err := hypervisor(env)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	sec := secrets.New(st, secrets.Options{})
	m, err := session.New(ctx, session.Config{
		Paths:             env.Paths,
		Store:             st,
		Secrets:           sec,
		CAStore:           caStore{sec.Internal()},
		AnthropicUpstream: os.Getenv(session.EnvAnthropicUpstream),
		Hypervisor:        hv,
		Image:             (&imagebuild.Builder{Paths: env.Paths, WorkDir: env.WorkDir, Logger: env.Logger}).Ensure,
		Logger:            env.Logger,
	})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return m, st, nil
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

// Engine returns a client of env's data directory's engine, starting a
// headless one (`sandbar serve`) when none runs: what a process that is
// not the engine uses to reach it (session.Client's Engine).
func Engine(ctx context.Context, env *Env) (*session.Remote, error) { return engine(ctx, env) }

// engine returns a client of this data directory's engine, starting a
// headless one (`sandbar serve`) when none runs.
func engine(ctx context.Context, env *Env) (*session.Remote, error) {
	sock := session.EngineSocket(env.Paths.Home)
	if r, err := session.Dial(ctx, sock); err == nil {
		return r, nil
	}
	self := env.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the sandbar binary to start the engine: %w", err)
		}
	}
	if err := env.Paths.Ensure(); err != nil {
		return nil, err
	}
	logPath := filepath.Join(env.Paths.Home, "engine.log")
	logF, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logF.Close()
	cmd := exec.Command(self, "serve")
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = logF, logF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the Sandbar engine: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err := session.Dial(ctx, sock); err == nil {
			return r, nil
		}
		select {
		case err := <-exited:
			// Another engine may have won the race to start.
			if r, derr := session.Dial(ctx, sock); derr == nil {
				return r, nil
			}
			return nil, fmt.Errorf("the Sandbar engine exited at start (%v): see %s", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the Sandbar engine did not answer within 30 s: see %s", logPath)
		}
	}
}

// serve is the headless engine: it runs sessions for CLI commands and
// exits when it has had nothing to do for --idle-exit.
func serve(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar serve")
	idleExit := fs.Duration("idle-exit", time.Minute, "exit after this long with no session and no client (0: never)")
	if err := parse(fs, args); err != nil {
		return err
	}
	m, st, err := OpenManager(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	e, err := session.Listen(m)
	if err != nil {
		if errors.Is(err, session.ErrEngineRunning) {
			fmt.Fprintln(env.Stderr, "sandbar: an engine already runs for", env.Paths.Home)
			return nil
		}
		return err
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx) }()
	env.Logger.Info("engine serving", "socket", session.EngineSocket(env.Paths.Home), "pid", os.Getpid())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			if err != nil {
				env.Logger.Error("engine", "err", err)
			}
			break loop
		case <-tick.C:
			if *idleExit > 0 && e.Idle() > *idleExit {
				break loop
			}
		}
	}
	e.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return m.Close(cctx)
}
