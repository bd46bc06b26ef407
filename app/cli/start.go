package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/readable"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// `sandbar start`, and following a session with --wait.

// startFlags registers start's options on fs.
func startFlags(fs *flag.FlagSet, o *session.Options) (memory, disk *int, agent *string) {
	fs.StringVar(&o.Repo, "repo", "", "repository folder (added as a project if new)")
	fs.StringVar(&o.Base, "base", "", "branch, tag or commit to start from (default: the repository's current branch)")
	fs.StringVar(&o.Prompt, "prompt", "", "the agent's first message")
	agent = fs.String("agent", "", "run this shell command as the agent instead of Claude Code")
	fs.IntVar(&o.CPUs, "cpus", 0, "vCPUs (default 2)")
	memory = fs.Int("memory", 0, "memory in MiB (default 2048)")
	disk = fs.Int("disk", 0, "scratch disk in GiB (default 8)")
	fs.BoolVar(&o.NoNetwork, "no-network", false, "no network in the VM (the same as --network off)")
	fs.StringVar(&o.Network, "network", "", "the VM's network: allowlist (only what the rules allow), open (anything public) or off; default: the project's and Sandbar's settings (allowlist)")
	fs.DurationVar(&o.Timeout, "timeout", 0, "stop the session after this long (e.g. 30m; default none)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 0, "mark the session waiting after this long without output or input")
	fs.BoolVar(&o.IdleStop, "idle-stop", false, "stop the session at the idle timeout instead")
	fs.StringVar(&o.On, "on", "", "run the session's VM on this remote host (see `sandbar hosts`), or auto: on this machine or the host with the most free memory that fits it; default this machine")
	fs.StringVar(&o.Env, "env", "", "the environment: project (the repository's devcontainer.json once you trust it; the default) or default (Sandbar's own image)")
	return memory, disk, agent
}

func start(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar start")
	var o session.Options
	memory, disk, agent := startFlags(fs, &o)
	wait := fs.Bool("wait", false, "show the agent's output live and exit with its exit code; with Claude Code, return when its turn ends (0, or 1 for an error result) and leave the session waiting")
	raw := fs.Bool("raw", false, "with --wait, print the agent's bytes as they are, control characters and escape sequences included (default: shown as escapes)")
	jsonOut := fs.Bool("json", false, "with --wait, print Claude Code's stream-json as it comes (default: what a person reads: its text, one line per tool call, the turn's end)")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: sandbar start [flags] [PROJECT]\n\nStarts an agent session on a fresh clone of the project's repository, in its own VM.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		if o.Repo == "" {
			o.Repo = env.WorkDir
		}
	case 1:
		o.Project = fs.Arg(0)
	default:
		return UsageError{Msg: "sandbar start: give at most one project"}
	}
	if o.Repo != "" && !filepath.IsAbs(o.Repo) {
		o.Repo = filepath.Join(env.WorkDir, o.Repo)
	}
	o.MemoryMiB, o.DiskGiB = *memory, *disk
	if *agent != "" {
		o.Agent = session.AgentSpec{Command: "sh", Args: []string{"-c", *agent}}
	}
	if *wait && o.Agent.Claude() && o.Prompt == "" {
		return UsageError{Msg: "sandbar start --wait: Claude Code waits for a first message, so there is no turn to wait for: give one with --prompt"}
	}
	// What was asked is checked before the image, whose first build is
	// long: a folder that is no repository, or a project there is none
	// of, is said at once.
	if o.Repo != "" {
		if _, err := workspace.Resolve(ctx, o.Repo); err != nil {
			return err
		}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if o.Project != "" {
		if _, err := e.FindProject(ctx, o.Project); err != nil {
			return err
		}
	}
	// The image build is long the first time: do it here, with progress.
	if _, err := imageOrBuild(ctx, env); err != nil {
		return err
	}
	if *wait {
		return startAndWait(ctx, env, e, o, logPrinter{env: env, claude: o.Agent.Claude(), json: *jsonOut, raw: *raw})
	}
	s, err := e.Start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "session %s started on branch %s\n", s.ID, s.Branch)
	fmt.Fprintf(env.Stdout, "  follow it: sandbar logs -f %s\n", s.ID[:6])
	return nil
}

// startAndWait is `start --wait`: it starts the session through e and
// follows it.
func startAndWait(ctx context.Context, env *Env, e session.Service, o session.Options, p logPrinter) error {
	// Subscribed first (Subscribe returns once it is), so nothing the
	// session does is missed.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := e.Subscribe(sctx, "")
	s, err := e.Start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "sandbar: session %s on branch %s\n", s.ID, s.Branch)
	return follow(ctx, env, e, s.ID, events, p, true)
}

// follow prints a session's events until it ends, then exits with the
// agent's exit code; or, for Claude Code, until its turn ends, then exits
// with the turn's result (0, or 1 for an error) and leaves the session
// waiting for a message. Ctrl-C stops the session when stopOnCancel,
// else only the following. What the agent said (its log lines, readable
// unless p.json, its turn's summary, the reasons it gave) is shown
// through termsafe, unless p.raw.
func follow(ctx context.Context, env *Env, e session.Service, id string, events <-chan session.Event, p logPrinter, stopOnCancel bool) error {
	lastReason := ""
	lp := newLivePrinter(env, p.raw)
	for {
		select {
		case <-ctx.Done():
			if !stopOnCancel {
				fmt.Fprintf(env.Stderr, "sandbar: stopped following; the session goes on: sandbar logs -f %s\n", short(id))
				return ExitError{Code: 130}
			}
			fmt.Fprintln(env.Stderr, "sandbar: stopping the session")
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			e.Stop(sctx, id)
			return ExitError{Code: 130}
		case ev, ok := <-events:
			if !ok {
				return errors.New("lost the engine while following the session: `sandbar ls` shows its state")
			}
			if ev.Session != id && ev.Kind != session.EventDropped {
				continue
			}
			switch ev.Kind {
			case session.EventLog:
				p.print(*ev.Log)
			case session.EventLive:
				if ev.Live != nil && !p.json {
					lp.show(*ev.Live)
				}
			case session.EventDropped:
				fmt.Fprintf(env.Stderr, "sandbar: %d events not shown (this terminal fell behind): `sandbar logs %s` has every line\n", ev.Dropped, short(id))
			case session.EventTurn:
				if ev.Turn == nil {
					continue
				}
				if ev.Turn.Code != 0 {
					// A failed turn fails the session (see session.FailureReason).
					fmt.Fprintf(env.Stderr, "sandbar: the agent's turn failed (%s); the session stops: sandbar restart %s once it is fixed\n",
						termsafe.Text(ev.Turn.Summary), short(id))
					return ExitError{Code: ev.Turn.Code}
				}
				fmt.Fprintf(env.Stderr, "sandbar: the agent's turn ended (%s); the session waits for your message: sandbar chat %s TEXT, or sandbar stop %s\n",
					termsafe.Text(ev.Turn.Summary), short(id), short(id))
				return nil
			case session.EventState:
				if ev.Reason != lastReason && env.IsTerminal {
					fmt.Fprintf(env.Stderr, "sandbar: %s %s: %s\n", ev.State, termsafe.Line(ev.Activity), termsafe.Text(ev.Reason))
				}
				lastReason = ev.Reason
				switch ev.State {
				case session.StateStopped, session.StateFailed, session.StateInterrupted:
					if ev.State == session.StateFailed {
						fmt.Fprintf(env.Stderr, "sandbar: session failed: %s\n", termsafe.Text(ev.Reason))
					}
					code := 0
					if ev.ExitCode != nil {
						code = *ev.ExitCode
					} else if ev.State != session.StateStopped {
						code = 1
					}
					if code != 0 {
						return ExitError{Code: code}
					}
					return nil
				}
			}
		}
	}
}

// logPrinter prints a session's log lines: for Claude Code, what a
// person reads of its stream-json (package readable), unless json asks
// for the stream as it is; escaped, unless raw.
type logPrinter struct {
	env               *Env
	claude, json, raw bool
}

func (p logPrinter) print(l store.LogLine) {
	if p.json || !p.claude {
		printLogLine(p.env, l, p.raw)
		return
	}
	for _, r := range readable.Log(l, true) {
		printLogLine(p.env, r, p.raw)
	}
}

// printLogLine prints one line of a session's log: the agent's stdout on
// stdout, the rest on stderr. Its text is shown through termsafe (a log
// line holds no newline), unless raw.
func printLogLine(env *Env, l store.LogLine, raw bool) {
	if !raw {
		l.Text = termsafe.Text(l.Text)
	}
	switch l.Stream {
	case "stdout":
		fmt.Fprintln(env.Stdout, l.Text)
	case "stderr":
		fmt.Fprintln(env.Stderr, l.Text)
	case "chat":
		fmt.Fprintf(env.Stdout, "> %s\n", l.Text)
	default:
		fmt.Fprintf(env.Stderr, "[%s] %s\n", termsafe.Line(l.Stream), l.Text)
	}
}
