package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/session"
	"sandbar/app/store"
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.ID, p.Name, orDash(p.DefaultBranch), p.Path)
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
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ss, err := svc.List(ctx)
	if err != nil {
		return err
	}
	projects := map[int64]store.Project{}
	if ps, err := svc.Projects(ctx); err == nil {
		for _, p := range ps {
			projects[p.ID] = p
		}
	}
	if *asJSON {
		out := make([]sessionJSON, 0, len(ss))
		for _, s := range ss {
			p := projects[s.ProjectID]
			j := sessionJSON{ID: s.ID, Title: session.Title(s), Project: p.Name, Repo: p.Path, Branch: s.Branch, State: string(s.State), Activity: s.Activity,
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
	fmt.Fprintln(tw, "ID\tTITLE\tPROJECT\tBRANCH\tSTATE\tMERGED\tEXIT\tAGE\tREASON")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID[:min(8, len(s.ID))], clip(session.Title(s), 40), projects[s.ProjectID].Name, s.Branch, state, mergedCell(s.Merged), exit,
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
	// The store itself: the tail of a log (LastLogs) is no Service's.
	st, err := env.Store()
	if err != nil {
		return err
	}
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
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	return e.Chat(ctx, fs.Arg(0), strings.Join(fs.Args()[1:], " "))
}

func execCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar exec")
	user := fs.String("user", session.UserAgent, "agent or root")
	cwd := fs.String("cwd", "", "working directory in the guest (default /workspace)")
	timeout := fs.Duration("timeout", 0, "kill the command after this long")
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
	res, err := e.Exec(ctx, fs.Arg(0), session.ExecRequest{Argv: argv, User: *user, Cwd: *cwd, Timeout: *timeout}, env.Stdout, env.Stderr)
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
			fmt.Fprintf(env.Stdout, "session %s %s: %s\n", s.ID, s.State, s.Reason)
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
	fmt.Fprintf(env.Stdout, "session %s is now %q\n", s.ID, s.Title)
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
	return oneID(ctx, env, args, "restart", func(e session.Service, id string) error {
		s, err := e.Restart(ctx, id)
		if err == nil {
			fmt.Fprintf(env.Stdout, "session %s restarting\n", s.ID)
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
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar merge: give one session id: sandbar merge [--into | --force] ID"}
	}
	if *into && *force {
		return UsageError{Msg: "sandbar merge: --force overwrites the session's own branch, and --into does not touch it: give one of them"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	res, err := e.Merge(ctx, fs.Arg(0), session.MergeOptions{Into: *into, Force: *force})
	if err != nil {
		return err
	}
	branch, repo := "the session's branch", "the repository"
	if s, err := e.Get(ctx, fs.Arg(0)); err == nil {
		branch = "branch " + s.Branch
		if p, err := e.Project(ctx, s.ProjectID); err == nil {
			repo = p.Path
		}
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
