package cli

import (
	"context"
	"fmt"
	"strings"

	"sandbar/app/cli/termsafe"
)

// commitCmd is `sandbar commit ID [-m MSG]`: Commit now.
func commitCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar commit")
	msg := fs.String("m", "", "the commit's message (default: made from the session's prompt)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar commit: give one session id: sandbar commit ID [-m MESSAGE]"}
	}
	if *msg != "" && strings.TrimSpace(*msg) == "" {
		return UsageError{Msg: "sandbar commit: -m gives an empty message: write one, or leave -m out for one made from the session's prompt"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	res, err := e.Commit(ctx, fs.Arg(0), *msg)
	if err != nil {
		return err
	}
	id := termsafe.Line(fs.Arg(0))
	// The file names and the subject are the agent's.
	fmt.Fprintf(env.Stdout, "committed the session's work on %s as %s %q: %s\n", termsafe.Line(res.Branch), short(res.Commit), termsafe.Line(res.Subject), fileCount(res.Files))
	if res.Working {
		fmt.Fprintln(env.Stdout, "note: the agent was in the middle of a turn: what was on the session's disk then is committed, and what it writes after stays uncommitted")
	}
	if res.NotInClone != "" {
		fmt.Fprintf(env.Stdout, "note: the clone in the VM did not take the commit (%s): the next save takes the clone's branch as it is, so commit again once the agent is idle (sandbar commit %s)\n", termsafe.Line(res.NotInClone), id)
		return nil
	}
	fmt.Fprintf(env.Stdout, "sandbar merge %s brings it home (--into: into your current branch)\n", id)
	return nil
}

// fileCount is "1 file (a.go)", "3 files (a.go, b.go, c.go)", the names
// made safe for a terminal and the list cut after a few.
func fileCount(files []string) string {
	names := lines(files)
	const show = 5
	if len(names) > show {
		names = append(names[:show], fmt.Sprintf("and %d more", len(files)-show))
	}
	return fmt.Sprintf("%d %s (%s)", len(files), plural(len(files), "file", "files"), strings.Join(names, ", "))
}
