package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sandbar/app/engine"
	"sandbar/app/hostsleep"
	"sandbar/app/session"
)

// serve is the headless engine: it runs sessions for CLI commands and
// exits when it has had nothing to do for --idle-exit. (main's context
// ends on SIGINT and SIGTERM.)
func serve(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar serve")
	idleExit := fs.Duration("idle-exit", time.Minute, "exit after this long with no session and no client (0: never)")
	if err := parse(fs, args); err != nil {
		return err
	}
	m, err := env.Manager(ctx)
	if err != nil {
		return err
	}
	e, err := engine.Listen(ctx, env.Paths, m, env.Logger)
	if err != nil {
		if errors.Is(err, engine.ErrRunning) {
			fmt.Fprintln(env.Stderr, "sandbar: an engine already runs for", env.Paths.Home)
			return nil
		}
		return err
	}
	defer e.Close()
	// Started from another login session, it may not reach the keyring a
	// client can: it hands over to that client's engine then.
	e.MayYield()
	sctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- e.Serve(sctx) }()
	env.Logger.Info("engine serving", "socket", env.Paths.EngineSocket(), "api", engine.APIVersion)
	sw, err := hostsleep.Start(ctx, sleepHandler(m), env.Logger)
	if err != nil {
		env.Logger.Info("sessions run on through the host's sleep", "err", err)
	} else {
		defer sw.Close()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			served = nil
			if err != nil {
				env.Logger.Error("engine", "err", err)
			}
			break loop
		case <-e.Yielded():
			env.Logger.Info("engine handed over to a client that can reach the keyring")
			break loop
		case <-tick.C:
			if *idleExit > 0 && e.Idle() > *idleExit {
				break loop
			}
		}
	}
	// The engine stops taking requests; it keeps its lock until the
	// sessions are down.
	stopServing()
	if sw != nil {
		sw.Close() // no suspend for a sleep from here on: the quit decides
	}
	// With "keep sessions" on, they are suspended first (session.Quit)
	// and the next engine resumes them.
	qctx := context.WithoutCancel(ctx)
	closeErr := m.Quit(qctx, m.KeepPolicy(qctx), 30*time.Second)
	if served != nil {
		<-served
	}
	return closeErr
}

// sleepHandler suspends the engine's sessions as the host goes to sleep
// and resumes them when it wakes (session.HostSleeping, HostWoke).
func sleepHandler(m *session.Manager) hostsleep.Handler {
	return hostsleep.Handler{
		Sleeping: func(ctx context.Context) { m.HostSleeping(ctx) },
		Woke:     func(ctx context.Context) { m.HostWoke(ctx) },
	}
}
