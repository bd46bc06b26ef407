package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/sandbox"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/guest/protocol"
)

func projectAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project add")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar project add: give the repository folder: sandbar project add PATH"}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	for _, path := range fs.Args() {
		if !filepath.IsAbs(path) {
			path = filepath.Join(env.WorkDir, path)
		}
		p, note, err := e.AddProject(ctx, path)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintln(env.Stdout, note)
		}
		fmt.Fprintf(env.Stdout, "added project %d %q (%s, branch %s)\n", p.ID, p.Name, p.Path, orDash(p.DefaultBranch))
	}
	return nil
}

func projectList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project ls")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	ps, err := st.Projects(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(env.Stdout, "no projects yet: add one with `sandbar project add PATH`")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tBRANCH\tPATH")
	for _, p := range ps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.ID, p.Name, orDash(p.DefaultBranch), p.Path)
	}
	return tw.Flush()
}

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
	return memory, disk, agent
}

func start(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar start")
	var o session.Options
	memory, disk, agent := startFlags(fs, &o)
	wait := fs.Bool("wait", false, "show the agent's output live and exit with its exit code; with Claude Code, return when its turn ends (0, or 1 for an error result) and leave the session waiting")
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
	// The image build is long the first time: do it here, with progress.
	if _, err := imageOrBuild(ctx, env); err != nil {
		return err
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	if *wait {
		return startAndWait(ctx, env, e, o)
	}
	s, err := e.Start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "session %s started on branch %s\n", s.ID, s.Branch)
	fmt.Fprintf(env.Stdout, "  follow it: sandbar logs -f %s\n", s.ID[:6])
	return nil
}

// startAndWait is `start --wait`: it starts the session through the
// engine e and follows it.
func startAndWait(ctx context.Context, env *Env, e *session.Remote, o session.Options) error {
	// Subscribed first, so nothing the session does is missed.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := e.Subscribe(sctx, "")
	if err != nil {
		return err
	}
	s, err := e.Start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "sandbar: session %s on branch %s\n", s.ID, s.Branch)
	return follow(ctx, env, e, s.ID, events)
}

// follow prints a session's events until it ends, then exits with the
// agent's exit code; or, for Claude Code, until its turn ends, then exits
// with the turn's result (0, or 1 for an error) and leaves the session
// waiting for a message. Ctrl-C stops the session.
func follow(ctx context.Context, env *Env, e *session.Remote, id string, events <-chan session.Event) error {
	lastReason := ""
	for {
		select {
		case <-ctx.Done():
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
				printLogLine(env, *ev.Log)
			case session.EventDropped:
				fmt.Fprintf(env.Stderr, "sandbar: %d events not shown (this terminal fell behind): `sandbar logs %s` has every line\n", ev.Dropped, short(id))
			case session.EventTurn:
				if ev.Turn == nil {
					continue
				}
				fmt.Fprintf(env.Stderr, "sandbar: the agent's turn ended (%s); the session waits for your message: sandbar chat %s TEXT, or sandbar stop %s\n",
					ev.Turn.Summary, short(id), short(id))
				if ev.Turn.Code != 0 {
					return ExitError{Code: ev.Turn.Code}
				}
				return nil
			case session.EventState:
				if ev.Reason != lastReason && env.IsTerminal {
					fmt.Fprintf(env.Stderr, "sandbar: %s %s: %s\n", ev.State, ev.Activity, ev.Reason)
				}
				lastReason = ev.Reason
				switch ev.State {
				case session.StateStopped, session.StateFailed, session.StateInterrupted:
					if ev.State == session.StateFailed {
						fmt.Fprintf(env.Stderr, "sandbar: session failed: %s\n", ev.Reason)
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

func printLogLine(env *Env, l store.LogLine) {
	switch l.Stream {
	case "stdout":
		fmt.Fprintln(env.Stdout, l.Text)
	case "stderr":
		fmt.Fprintln(env.Stderr, l.Text)
	case "chat":
		fmt.Fprintf(env.Stdout, "> %s\n", l.Text)
	default:
		fmt.Fprintf(env.Stderr, "[%s] %s\n", l.Stream, l.Text)
	}
}

type sessionJSON struct {
	ID        string             `json:"id"`
	Project   string             `json:"project"`
	Repo      string             `json:"repo"`
	Branch    string             `json:"branch"`
	State     string             `json:"state"`
	Activity  string             `json:"activity,omitempty"`
	Reason    string             `json:"reason,omitempty"`
	ExitCode  *int               `json:"exit_code"`
	Agent     string             `json:"agent"`
	CPUs      int                `json:"cpus"`
	MemoryMiB int                `json:"memory_mib"`
	DiskGiB   int                `json:"disk_gib"`
	Network   bool               `json:"network"`
	Created   time.Time          `json:"created"`
	Ended     *time.Time         `json:"ended,omitempty"`
	Timings   map[string]float64 `json:"timings_ms,omitempty"`
	Merged    *store.Merge       `json:"merged,omitempty"`
}

// mergedCell is the MERGED column of sandbar ls: where the session's
// work last went ("main@1a2b3c4", or the session's own branch as
// "branch@…"), "-" when never.
func mergedCell(m store.Merge) string {
	if m.IsZero() {
		return "-"
	}
	into := m.Into
	if m.Branch {
		into = "branch"
	}
	return into + "@" + m.Commit[:min(7, len(m.Commit))]
}

func list(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar ls")
	asJSON := fs.Bool("json", false, "print JSON: an array of sessions")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	ss, err := st.Sessions(ctx, store.SessionFilter{})
	if err != nil {
		return err
	}
	projects := map[int64]store.Project{}
	if ps, err := st.Projects(ctx); err == nil {
		for _, p := range ps {
			projects[p.ID] = p
		}
	}
	if *asJSON {
		out := make([]sessionJSON, 0, len(ss))
		for _, s := range ss {
			p := projects[s.ProjectID]
			j := sessionJSON{ID: s.ID, Project: p.Name, Repo: p.Path, Branch: s.Branch, State: string(s.State), Activity: s.Activity,
				Reason: s.Reason, ExitCode: s.ExitCode, Agent: s.Agent.Kind, CPUs: s.Limits.CPUs, MemoryMiB: s.Limits.MemoryMiB,
				DiskGiB: s.Limits.DiskGiB, Network: s.Limits.Network, Created: s.Created}
			if !s.Ended.IsZero() {
				t := s.Ended
				j.Ended = &t
			}
			if !s.Merged.IsZero() {
				m := s.Merged
				j.Merged = &m
			}
			if len(s.Timings) > 0 {
				j.Timings = map[string]float64{}
				for k, v := range s.Timings {
					j.Timings[k] = float64(v.Microseconds()) / 1000
				}
			}
			out = append(out, j)
		}
		return printJSON(env.Stdout, out)
	}
	if len(ss) == 0 {
		fmt.Fprintln(env.Stdout, "no sessions: start one with `sandbar start` in a repository")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROJECT\tBRANCH\tSTATE\tMERGED\tEXIT\tAGE\tREASON")
	for _, s := range ss {
		state := string(s.State)
		if s.Activity != "" {
			state += " (" + s.Activity + ")"
		}
		exit := "-"
		if s.ExitCode != nil {
			exit = fmt.Sprint(*s.ExitCode)
		}
		reason := s.Reason
		if len(reason) > 60 {
			reason = reason[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID[:min(8, len(s.ID))], projects[s.ProjectID].Name, s.Branch, state, mergedCell(s.Merged), exit,
			time.Since(s.Created).Round(time.Second), strings.ReplaceAll(reason, "\n", " "))
	}
	return tw.Flush()
}

func logs(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar logs")
	followF := fs.Bool("f", false, "follow: keep printing new lines until the session ends")
	tail := fs.Int("n", 0, "print only the last N lines first (0: all that are kept)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar logs: give one session id: sandbar logs [-f] ID"}
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := st.FindSession(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	var after int64
	if *tail > 0 {
		last, err := st.LastLogs(ctx, s.ID, *tail)
		if err != nil {
			return err
		}
		for _, l := range last {
			printLogLine(env, l)
			after = l.Seq
		}
	}
	for {
		lines, err := st.Logs(ctx, s.ID, after, 5000)
		if err != nil {
			return err
		}
		for _, l := range lines {
			printLogLine(env, l)
			after = l.Seq
		}
		if len(lines) == 5000 {
			continue
		}
		if !*followF {
			return nil
		}
		cur, err := st.Session(ctx, s.ID)
		if err != nil {
			return err
		}
		if !session.Live(cur.State) {
			// One more read: lines flushed just before the end.
			if more, _ := st.Logs(ctx, s.ID, after, 5000); len(more) > 0 {
				continue
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func chat(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar chat")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return UsageError{Msg: "sandbar chat: give a session id and the text: sandbar chat ID TEXT"}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	return e.Chat(ctx, fs.Arg(0), strings.Join(fs.Args()[1:], " "))
}

func execCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar exec")
	user := fs.String("user", protocol.UserAgent, "agent or root")
	cwd := fs.String("cwd", "", "working directory in the guest (default /workspace)")
	timeout := fs.Duration("timeout", 0, "kill the command after this long")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return UsageError{Msg: "sandbar exec: give a session id and a command: sandbar exec ID -- CMD [ARGS...]"}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	argv := fs.Args()[1:]
	if argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return UsageError{Msg: "sandbar exec: no command after --"}
	}
	res, err := e.Exec(ctx, fs.Arg(0), sandbox.ExecRequest{Argv: argv, User: *user, Cwd: *cwd, Timeout: *timeout}, env.Stdout, env.Stderr)
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return ExitError{Code: res.Code}
	}
	return nil
}

func stop(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "stop", func(e *session.Remote, id string) error {
		s, err := e.Stop(ctx, id)
		if err == nil {
			fmt.Fprintf(env.Stdout, "session %s %s: %s\n", s.ID, s.State, s.Reason)
		}
		return err
	})
}

func restart(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "restart", func(e *session.Remote, id string) error {
		s, err := e.Restart(ctx, id)
		if err == nil {
			fmt.Fprintf(env.Stdout, "session %s restarting\n", s.ID)
		}
		return err
	})
}

func oneID(ctx context.Context, env *Env, args []string, verb string, do func(*session.Remote, string) error) error {
	fs := newFlags(env, "sandbar "+verb)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: fmt.Sprintf("sandbar %s: give one session id", verb)}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	return do(e, fs.Arg(0))
}

func merge(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar merge")
	force := fs.Bool("force", false, "overwrite a diverged branch of the same name")
	into := fs.Bool("into", false, "merge into the repository's current branch and update its working tree (refused if the tree has uncommitted changes or the merge conflicts), instead of creating the session's branch")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar merge: give one session id: sandbar merge [--into | --force] ID"}
	}
	if *into && *force {
		return UsageError{Msg: "sandbar merge: --force overwrites the session's own branch, and --into does not touch it: give one of them"}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	res, err := e.Merge(ctx, fs.Arg(0), session.MergeOptions{Into: *into, Force: *force})
	if err != nil {
		return err
	}
	branch, repo := "the session's branch", "the repository"
	if st, err := openStore(env); err == nil {
		if s, err := st.FindSession(ctx, fs.Arg(0)); err == nil {
			branch = "branch " + s.Branch
			if p, err := st.Project(ctx, s.ProjectID); err == nil {
				repo = p.Path
			}
		}
		st.Close()
	}
	how := "is at"
	switch {
	case res.Into != "":
		how = "a merge commit"
		if res.FastForward {
			how = "a fast-forward"
		}
		fmt.Fprintf(env.Stdout, "merged the session's work into %s in %s: %s from %s to %s; the working tree is updated\n", res.Into, repo, how, short(res.Previous), short(res.Commit))
		if len(res.Submodules) > 0 {
			fmt.Fprintf(env.Stdout, "the session's submodule commits are in the repository's submodules as %s: %s\n", branch, strings.Join(res.Submodules, ", "))
		}
		skippedModulesNote(env.Stdout, res.SkippedSubmodules)
		if len(res.Uncommitted) > 0 {
			fmt.Fprintf(env.Stdout, "note: %d uncommitted changes in the session were not included: %s\n", len(res.Uncommitted), strings.Join(res.Uncommitted, ", "))
		}
		return nil
	case res.Created:
		how = "created at"
	case res.Updated:
		how = "moved from " + short(res.Previous) + " to"
	}
	fmt.Fprintf(env.Stdout, "%s %s %s in %s (your working tree is untouched)\n", branch, how, short(res.Commit), repo)
	if len(res.Submodules) > 0 {
		fmt.Fprintf(env.Stdout, "the session's submodule commits are in the repository's submodules under the same branch: %s\n", strings.Join(res.Submodules, ", "))
	}
	skippedModulesNote(env.Stdout, res.SkippedSubmodules)
	if len(res.Uncommitted) > 0 {
		fmt.Fprintf(env.Stdout, "note: %d uncommitted changes in the session were not included: %s\n", len(res.Uncommitted), strings.Join(res.Uncommitted, ", "))
	}
	return nil
}

// skippedModulesNote tells the person which submodules' session commits a
// merge left in the session, one line each with why (at most 20).
func skippedModulesNote(w io.Writer, lines []string) {
	n := len(lines)
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "note: the session's commits in %d %s were not brought into the repository:\n", n, plural(n, "submodule", "submodules"))
	const show = 20
	for i, line := range lines {
		if i == show {
			fmt.Fprintf(w, "  and %d more\n", n-show)
			break
		}
		fmt.Fprintf(w, "  %s\n", line)
	}
}

func remove(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar rm")
	force := fs.Bool("force", false, "delete even with uncommitted or unmerged work")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar rm: give session ids"}
	}
	e, err := engine(ctx, env)
	if err != nil {
		return err
	}
	for _, id := range fs.Args() {
		if err := e.Remove(ctx, id, *force); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "removed session %s\n", id)
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
