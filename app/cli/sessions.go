package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/readable"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

func projectAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project add")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar project add: give the repository folder: sandbar project add PATH"}
	}
	e, err := sessions(ctx, env)
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
			fmt.Fprintln(env.Stdout, termsafe.Text(note))
		}
		fmt.Fprintf(env.Stdout, "added project %d %q (%s, branch %s)\n", p.ID, p.Name, termsafe.Line(p.Path), termsafe.Line(orDash(p.DefaultBranch)))
	}
	return nil
}

func projectList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project ls")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ps, err := svc.Projects(ctx)
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.ID, termsafe.Line(p.Name), termsafe.Line(orDash(p.DefaultBranch)), termsafe.Line(p.Path))
	}
	return tw.Flush()
}

type sessionJSON struct {
	ID        string             `json:"id"`
	Title     string             `json:"title"`
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
	// Changes, with --wide, sums the session's last saved work against
	// its base; absent when it saved none.
	Changes *workspace.DiffStat `json:"changes,omitempty"`
	// Host is the remote host the session runs on (sandbar start --on);
	// absent for this machine.
	Host string `json:"host,omitempty"`
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

// changesCell is the CHANGES column of sandbar ls --wide: "+120-14/3"
// reads as 120 lines added, 14 deleted, in 3 files; "3 files" alone when
// the lines were not counted (a diff too big to count in time).
func changesCell(d workspace.DiffStat) string {
	if d.FilesOnly {
		return fmt.Sprintf("%d files", d.Files)
	}
	return fmt.Sprintf("+%d-%d/%d", d.Added, d.Deleted, d.Files)
}

func list(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar ls")
	asJSON := fs.Bool("json", false, "print JSON: an array of sessions")
	wide := fs.Bool("wide", false, "add each session's saved changes against its base (CHANGES: +added −deleted, files), counted by git in Sandbar's repository")
	if err := parse(fs, args); err != nil {
		return err
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ss, err := svc.List(ctx)
	if err != nil {
		return err
	}
	sayRecovered(ctx, env)
	projects := map[int64]store.Project{}
	if ps, err := svc.Projects(ctx); err == nil {
		for _, p := range ps {
			projects[p.ID] = p
		}
	}
	on := sessionHosts(ctx, env)
	changes := map[string]workspace.DiffStat{}
	if *wide {
		for _, s := range ss {
			if d, err := svc.DiffStat(ctx, s.ID); err == nil {
				changes[s.ID] = d
			}
		}
	}
	if *asJSON {
		out := make([]sessionJSON, 0, len(ss))
		for _, s := range ss {
			p := projects[s.ProjectID]
			j := sessionJSON{ID: s.ID, Title: session.Title(s), Project: p.Name, Repo: p.Path, Branch: s.Branch, State: string(s.State), Activity: s.Activity,
				Reason: s.Reason, ExitCode: s.ExitCode, Agent: s.Agent.Kind, CPUs: s.Limits.CPUs, MemoryMiB: s.Limits.MemoryMiB,
				DiskGiB: s.Limits.DiskGiB, Network: s.Limits.Network, Created: s.Created, Host: on[s.ID]}
			if !s.Ended.IsZero() {
				t := s.Ended
				j.Ended = &t
			}
			if !s.Merged.IsZero() {
				m := s.Merged
				j.Merged = &m
			}
			if d, ok := changes[s.ID]; ok {
				j.Changes = &d
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
	changesCol := func(string) string { return "" }
	if *wide {
		changesCol = func(id string) string {
			if d, ok := changes[id]; ok {
				return changesCell(d) + "\t"
			}
			return "-\t"
		}
		fmt.Fprintln(tw, "ID\tTITLE\tPROJECT\tBRANCH\tSTATE\tMERGED\tCHANGES\tEXIT\tAGE\tREASON")
	} else {
		fmt.Fprintln(tw, "ID\tTITLE\tPROJECT\tBRANCH\tSTATE\tMERGED\tEXIT\tAGE\tREASON")
	}
	for _, s := range ss {
		state := string(s.State)
		if s.Activity != "" {
			state += " (" + s.Activity + ")"
		}
		if h := on[s.ID]; h != "" {
			state += " on " + h
		}
		exit := "-"
		if s.ExitCode != nil {
			exit = fmt.Sprint(*s.ExitCode)
		}
		reason := clip(s.Reason, 60)
		id := s.ID[:min(8, len(s.ID))]
		if s.Damaged != "" {
			id = termsafe.Line(s.ID) // whole, as on disk: every verb takes it
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\n", id, termsafe.Line(clip(session.Title(s), 40)),
			termsafe.Line(projects[s.ProjectID].Name), termsafe.Line(s.Branch), termsafe.Line(state), termsafe.Line(mergedCell(s.Merged)), changesCol(s.ID), exit,
			time.Since(s.Created).Round(time.Second), termsafe.Line(strings.ReplaceAll(reason, "\n", " ")))
	}
	return tw.Flush()
}

// LogTrimmedLine tops `sandbar logs` when the session's oldest lines were
// dropped.
const LogTrimmedLine = "[sandbar] earlier output trimmed: the stored log keeps a session's newest lines (see README, Bounded on disk)"

func logs(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar logs")
	followF := fs.Bool("f", false, "follow: keep printing new lines until the session ends")
	tail := fs.Int("n", 0, "print only the last N lines first (0: all that are kept)")
	raw := fs.Bool("raw", false, "print the agent's bytes as they are, control characters and escape sequences included (default: shown as escapes)")
	jsonOut := fs.Bool("json", false, "print Claude Code's stream-json lines as they are (default: what a person reads: its text, one line per tool call, each turn's end)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar logs: give one session id: sandbar logs [-f] [-n N] [--json] [--raw] ID"}
	}
	// The store itself: the tail of a log (LastLogs) is no Service's.
	st, err := env.Store()
	if err != nil {
		return err
	}
	s, err := st.FindSession(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	// When what is printed starts at the oldest line kept and older ones
	// were dropped (the stored log's caps), one line says so first.
	first, err := st.FirstLogSeq(ctx, s.ID)
	if err != nil {
		return err
	}
	p := logPrinter{env: env, claude: readable.Claude(s.Agent), json: *jsonOut, raw: *raw}
	show := func(l store.LogLine) {
		if first > 1 && l.Seq == first {
			fmt.Fprintln(env.Stderr, LogTrimmedLine)
		}
		p.print(l)
	}
	// A running tool's live output comes from the engine, as events:
	// it is never stored (session/live.go).
	var live <-chan session.Event
	lp := newLivePrinter(env, *raw)
	if *followF && !*jsonOut && session.Live(s.State) {
		if e, err := sessions(ctx, env); err == nil {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			live = e.Subscribe(sctx, s.ID)
		}
	}
	var after int64
	if *tail > 0 {
		last, err := st.LastLogs(ctx, s.ID, *tail)
		if err != nil {
			return err
		}
		for _, l := range last {
			show(l)
			after = l.Seq
		}
	}
	for {
		lines, err := st.Logs(ctx, s.ID, after, 5000)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if after == 0 {
				// Lines may have been dropped since first was read.
				first = max(first, l.Seq)
			}
			show(l)
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
		wait := time.After(250 * time.Millisecond)
	waiting:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-wait:
				break waiting
			case ev, ok := <-live:
				if !ok {
					live = nil
				} else if ev.Kind == session.EventLive && ev.Live != nil && ev.Session == s.ID {
					lp.show(*ev.Live)
				}
			}
		}
	}
}

func chat(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar chat")
	wait := fs.Bool("wait", false, "show the agent's answer live and return when its turn ends (0, or 1 for an error result); Ctrl-C stops following, not the session")
	raw := fs.Bool("raw", false, "with --wait, print the agent's bytes as they are, control characters and escape sequences included (default: shown as escapes)")
	jsonOut := fs.Bool("json", false, "with --wait, print Claude Code's stream-json as it comes (default: what a person reads)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return UsageError{Msg: "sandbar chat: give a session id and the text: sandbar chat [--wait] ID TEXT"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	text := strings.Join(fs.Args()[1:], " ")
	if !*wait {
		return e.Chat(ctx, fs.Arg(0), text)
	}
	st, err := env.Store()
	if err != nil {
		return err
	}
	s, err := st.FindSession(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	// Subscribed first, so the answer's first lines are not missed.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := e.Subscribe(sctx, s.ID)
	if err := e.Chat(ctx, s.ID, text); err != nil {
		return err
	}
	return follow(ctx, env, e, s.ID, events, logPrinter{env: env, claude: readable.Claude(s.Agent), json: *jsonOut, raw: *raw}, false)
}

func interruptCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar interrupt")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar interrupt: give one session id: sandbar interrupt ID"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if err := e.Interrupt(ctx, fs.Arg(0)); err != nil {
		return err
	}
	id := termsafe.Line(fs.Arg(0))
	fmt.Fprintf(env.Stdout, "interrupt sent to %s: its turn ends and it waits for your message (sandbar chat %s TEXT)\n", id, id)
	return nil
}

func execCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar exec")
	user := fs.String("user", session.UserAgent, "agent or root")
	cwd := fs.String("cwd", "", "working directory in the guest (default /workspace)")
	timeout := fs.Duration("timeout", 0, "kill the command after this long")
	raw := fs.Bool("raw", false, "print the command's bytes as they are on a terminal too (on a pipe or file they always are)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return UsageError{Msg: "sandbar exec: give a session id and a command: sandbar exec ID -- CMD [ARGS...]"}
	}
	e, err := sessions(ctx, env)
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
	// On a terminal the person reads the output: it is escaped, as every
	// verb's is. On a pipe or a file it is the byte stream a script asked
	// for (`sandbar exec ID -- tar c . > work.tar`), left as it is.
	stdout, stderr := env.Stdout, env.Stderr
	if env.IsTerminal && !*raw {
		w := termsafe.NewWriter(env.Stdout)
		defer w.Flush()
		stdout = w
	}
	if env.ErrIsTerminal && !*raw {
		w := termsafe.NewWriter(env.Stderr)
		defer w.Flush()
		stderr = w
	}
	res, err := e.Exec(ctx, fs.Arg(0), session.ExecRequest{Argv: argv, User: *user, Cwd: *cwd, Timeout: *timeout}, stdout, stderr)
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return ExitError{Code: res.Code}
	}
	return nil
}

func stop(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "stop", func(e session.Service, id string) error {
		s, err := e.Stop(ctx, id)
		if err == nil {
			fmt.Fprintf(env.Stdout, "session %s %s: %s\n", s.ID, s.State, termsafe.Text(s.Reason))
		}
		return err
	})
}

// rename gives a session a new title: sandbar rename ID TITLE ("" makes
// one from its prompt again).
func rename(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar rename")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return UsageError{Msg: `sandbar rename: give a session id and its new title: sandbar rename ID "Fix the login bug"`}
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	s, err := svc.Rename(ctx, fs.Arg(0), fs.Arg(1))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "session %s is now %q\n", s.ID, s.Title) // %q escapes what a terminal acts on
	return nil
}

// clip cuts s to n characters, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func restart(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar restart")
	fromSaved := fs.Bool("from-saved", false, "for a session whose disk is gone: continue from its last saved work in a new clone (the other choice is `sandbar rm ID`)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar restart: give one session id: sandbar restart [--from-saved] ID"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	restart := e.Restart
	if *fromSaved {
		restart = e.RestartFromSaved
	}
	s, err := restart(ctx, fs.Arg(0))
	if errors.Is(err, session.ErrScratchGone) {
		return fmt.Errorf("%w\nchoose: `sandbar restart --from-saved %s` continues from its last saved work in a new clone, or `sandbar rm %s` deletes the session", err, fs.Arg(0), fs.Arg(0))
	}
	if err != nil {
		return err
	}
	if *fromSaved {
		fmt.Fprintf(env.Stdout, "session %s restarting from its last saved work (its log says which commit)\n", s.ID)
		return nil
	}
	fmt.Fprintf(env.Stdout, "session %s restarting\n", s.ID)
	return nil
}

// resume brings a suspended session back, or runs a session paused on a
// full disk again: sandbar resume ID.
func resume(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "resume", func(e session.Service, id string) error {
		was, _ := e.Get(ctx, id)
		s, err := e.Resume(ctx, id)
		switch {
		case err != nil:
		case was.State == session.StateSuspended:
			fmt.Fprintf(env.Stdout, "session %s resuming from its saved state (`sandbar wait` or its log says when it runs)\n", s.ID)
		default:
			fmt.Fprintf(env.Stdout, "session %s resuming (it pauses again if the disk is still full)\n", s.ID)
		}
		return err
	})
}

// suspend saves a running session's VM and ends it: sandbar suspend ID.
func suspend(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "suspend", func(e session.Service, id string) error {
		s, err := e.Suspend(ctx, id)
		if err == nil {
			fmt.Fprintf(env.Stdout, "session %s suspended: `sandbar resume %s` brings it back where it was\n", s.ID, s.ID)
		}
		return err
	})
}

func oneID(ctx context.Context, env *Env, args []string, verb string, do func(session.Service, string) error) error {
	fs := newFlags(env, "sandbar "+verb)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: fmt.Sprintf("sandbar %s: give one session id", verb)}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	return do(e, fs.Arg(0))
}

func merge(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar merge")
	force := fs.Bool("force", false, "overwrite a diverged branch of the same name")
	into := fs.Bool("into", false, "merge into the repository's current branch and update its working tree (refused if the tree has uncommitted changes or the merge conflicts), instead of creating the session's branch")
	stash := fs.Bool("stash", false, "with --into: stash your uncommitted changes (when the session's work touches none of those files), merge, and put them back; if they cannot go back, they stay in git's stash and Sandbar says how to get them")
	accept := fs.Bool("accept-steering", false, "with --into: bring files that steer tools on your machine (.gitattributes, .lfsconfig, .envrc, .vscode/…) into the working tree; without it such a merge is refused, naming them")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar merge: give one session id: sandbar merge [--into [--stash] [--accept-steering] | --force] ID"}
	}
	if *into && *force {
		return UsageError{Msg: "sandbar merge: --force overwrites the session's own branch, and --into does not touch it: give one of them"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	if *accept && !*into {
		return UsageError{Msg: "sandbar merge: --accept-steering goes with --into (creating the branch leaves your working tree untouched)"}
	}
	if *stash && !*into {
		return UsageError{Msg: "sandbar merge: --stash goes with --into (creating the branch leaves your working tree untouched)"}
	}
	res, err := e.Merge(ctx, fs.Arg(0), session.MergeOptions{Into: *into, Force: *force, AcceptSteering: *accept, Stash: *stash})
	if err != nil {
		return err
	}
	defer printSteering(env.Stdout, fs.Arg(0), res.Steering, " in this merge")
	branch, repo := "the session's branch", "the repository"
	if s, err := e.Get(ctx, fs.Arg(0)); err == nil {
		branch = "branch " + termsafe.Line(s.Branch)
		if p, err := e.Project(ctx, s.ProjectID); err == nil {
			repo = termsafe.Line(p.Path)
		}
	}
	// The names in the notes are the agent's: files and submodule paths
	// it made.
	uncommitted, submodules := lines(res.Uncommitted), lines(res.Submodules)
	how := "is at"
	switch {
	case res.Into != "":
		how = "a merge commit"
		if res.FastForward {
			how = "a fast-forward"
		}
		fmt.Fprintf(env.Stdout, "merged the session's work into %s in %s: %s from %s to %s; the working tree is updated\n", termsafe.Line(res.Into), repo, how, short(res.Previous), short(res.Commit))
		if len(res.Submodules) > 0 {
			fmt.Fprintf(env.Stdout, "the session's submodule commits are in the repository's submodules as %s: %s\n", branch, strings.Join(submodules, ", "))
		}
		skippedModulesNote(env.Stdout, res.SkippedSubmodules)
		if len(res.Uncommitted) > 0 {
			fmt.Fprintf(env.Stdout, "note: %d uncommitted changes in the session were not included: %s\n", len(res.Uncommitted), strings.Join(uncommitted, ", "))
		}
		if len(res.Stashed) > 0 {
			fmt.Fprintf(env.Stdout, "your uncommitted changes in %s were stashed for the merge and put back\n", fileCount(res.Stashed))
		}
		if res.StashKept != "" {
			return fmt.Errorf("merged, but %s", termsafe.Line(res.StashKept))
		}
		return nil
	case res.Created:
		how = "created at"
	case res.Updated:
		how = "moved from " + short(res.Previous) + " to"
	}
	fmt.Fprintf(env.Stdout, "%s %s %s in %s (your working tree is untouched)\n", branch, how, short(res.Commit), repo)
	if len(res.Submodules) > 0 {
		fmt.Fprintf(env.Stdout, "the session's submodule commits are in the repository's submodules under the same branch: %s\n", strings.Join(submodules, ", "))
	}
	skippedModulesNote(env.Stdout, res.SkippedSubmodules)
	if len(res.Uncommitted) > 0 {
		fmt.Fprintf(env.Stdout, "note: %d uncommitted changes in the session were not included: %s\n", len(res.Uncommitted), strings.Join(uncommitted, ", "))
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
		fmt.Fprintf(w, "  %s\n", termsafe.Line(line))
	}
}

// lines is each of ss as termsafe.Line shows it.
func lines(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = termsafe.Line(s)
	}
	return out
}

// printJSON writes v as indented JSON, with what a terminal would act on
// (C1 controls, bidirectional overrides, which encoding/json leaves)
// written as \u escapes, which decode to the same strings.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
