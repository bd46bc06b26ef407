package cli

import (
	"context"
	"fmt"

	"sandbar/app/session"
)

// exportCmd is the command line's Files: it makes (or refreshes) the
// session's read-only export, the folder the window's Files and Editor
// open, through the same Service.Export, and prints its path alone on
// standard output (`cd "$(sandbar export ID)"`). When the work was saved
// goes to standard error.
func exportCmd(ctx context.Context, env *Env, args []string) error {
	return oneID(ctx, env, args, "export", func(svc session.Service, id string) error {
		dir, when, err := svc.Export(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, dir)
		if !when.IsZero() {
			fmt.Fprintf(env.Stderr, "a read-only copy of the session's files as saved %s: the agent's own files live in its VM\n", when.Local().Format("2006-01-02 15:04:05"))
		}
		return nil
	})
}
