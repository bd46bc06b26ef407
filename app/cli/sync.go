package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sandbar/app/cli/termsafe"
	"sandbar/app/session"
)

// syncCmd brings the person's current branch into a session's clone as
// origin/<branch>, and merges, rebases or asks the agent to.
func syncCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar sync")
	merge := fs.Bool("merge", false, "then merge it into the session's branch, in its VM")
	rebase := fs.Bool("rebase", false, "then rebase the session's branch onto it, in its VM")
	ask := fs.Bool("ask", false, "then ask the agent to bring it in, or, when a merge or rebase stopped on conflicts, to resolve them")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	// The flags may follow the id too: sandbar sync ID --merge.
	id := fs.Arg(0)
	if fs.NArg() > 1 {
		if err := parseArgs(fs, fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			id = ""
		}
	}
	if id == "" {
		return UsageError{Msg: "sandbar sync: give one session id: sandbar sync ID [--merge | --rebase | --ask]"}
	}
	mode, n := session.SyncFetch, 0
	for _, o := range []struct {
		on   bool
		mode session.SyncMode
	}{{*merge, session.SyncMerge}, {*rebase, session.SyncRebase}, {*ask, session.SyncAsk}} {
		if o.on {
			mode, n = o.mode, n+1
		}
	}
	if n > 1 {
		return UsageError{Msg: "sandbar sync: give one of --merge, --rebase and --ask"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	res, err := e.Sync(ctx, id, mode)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printSync(env.Stdout, termsafe.Line(id), res)
	}
	if res.Conflicted() && mode != session.SyncAsk {
		return ExitError{Code: 1}
	}
	return nil
}

// printSync says what Sync did and what to do next. Everything that
// came from the guest (file names) is shown through termsafe.
func printSync(w io.Writer, id string, res session.SyncResult) {
	ref, branch := termsafe.Line(res.Ref), termsafe.Line(res.Branch)
	fmt.Fprintf(w, "%s is your %s at %s in the session's clone: %s the session's branch lacks, %s of its own.\n",
		ref, branch, shortID(res.Commit), countOf(res.Behind, "commit"), countOf(res.Ahead, "commit"))
	switch {
	case res.Conflicted():
		files := make([]string, len(res.Conflicts))
		for i, f := range res.Conflicts {
			files[i] = termsafe.Line(f)
		}
		if res.Asked != "" {
			fmt.Fprintf(w, "Asked the agent to resolve the conflicts of the %s in %s: %s.\n", res.Op, countOf(len(files)+res.More, "file"), strings.Join(files, ", "))
			fmt.Fprintf(w, "Follow it with: sandbar logs -f %s\n", id)
			return
		}
		fmt.Fprintf(w, "The %s of %s stopped on conflicts in %s:\n", res.Op, ref, countOf(len(files)+res.More, "file"))
		for _, f := range files {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if res.More > 0 {
			fmt.Fprintf(w, "  and %d more\n", res.More)
		}
		fmt.Fprintf(w, "To continue:\n")
		steps := [][2]string{
			{"sandbar sync " + id + " --ask", "ask the agent to resolve them"},
			{"sandbar shell " + id, "resolve them yourself: edit, git add, git " + res.Op + " --continue"},
			{"sandbar exec " + id + " -- git " + res.Op + " --abort", "give up the " + res.Op},
		}
		width := 0
		for _, s := range steps {
			width = max(width, len(s[0]))
		}
		for _, s := range steps {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s[0], s[1])
		}
	case res.Mode == session.SyncMerge:
		fmt.Fprintf(w, "Merged %s into the session's branch in its VM: HEAD is %s.\n", ref, shortID(res.Head))
	case res.Mode == session.SyncRebase:
		fmt.Fprintf(w, "Rebased the session's branch onto %s in its VM: HEAD is %s.\n", ref, shortID(res.Head))
	case res.Mode == session.SyncAsk:
		fmt.Fprintf(w, "Asked the agent to bring %s into its branch. Follow it with: sandbar logs -f %s\n", ref, id)
	case res.Behind == 0:
		fmt.Fprintf(w, "The session's branch has all of %s already.\n", ref)
	default:
		fmt.Fprintf(w, "Next:\n")
		fmt.Fprintf(w, "  sandbar sync %s --merge    merge it into the session's branch, in its VM\n", id)
		fmt.Fprintf(w, "  sandbar sync %s --rebase   rebase the session's branch onto it, in its VM\n", id)
		fmt.Fprintf(w, "  sandbar sync %s --ask      ask the agent to bring it in\n", id)
	}
}

// countOf is "1 commit", "3 commits".
func countOf(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// shortID is a commit's short form.
func shortID(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}
