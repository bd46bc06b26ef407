package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/session"
)

// remove moves sessions to the trash, or with --purge deletes them for
// good.
func remove(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar rm")
	force := fs.Bool("force", false, "delete even with uncommitted or unmerged work")
	purge := fs.Bool("purge", false, "delete for good, not to the trash")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar rm: give session ids"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	for _, ref := range fs.Args() {
		s, err := e.Get(ctx, ref)
		if err != nil {
			return err
		}
		if err := e.Remove(ctx, s.ID, *force); err != nil {
			return err
		}
		if *purge {
			if _, err := e.EmptyTrash(ctx, []string{s.ID}); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "deleted session %s for good\n", s.ID)
			continue
		}
		fmt.Fprintf(env.Stdout, "moved session %s to the trash: `sandbar trash restore %s` brings it back (for %s)\n",
			s.ID, s.ID[:min(6, len(s.ID))], keepWords(session.DefaultTrashKeep))
	}
	return nil
}

func trashList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar trash ls")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ts, err := e.Trash(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if ts == nil {
			ts = []session.Trashed{}
		}
		return printJSON(env.Stdout, ts)
	}
	if len(ts) == 0 {
		fmt.Fprintln(env.Stdout, "the trash is empty")
		return nil
	}
	projects := map[int64]string{}
	if ps, err := e.Projects(ctx); err == nil {
		for _, p := range ps {
			projects[p.ID] = p.Name
		}
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROJECT\tBRANCH\tDELETED\tGONE FOR GOOD\tSIZE")
	var total int64
	now := time.Now()
	for _, t := range ts {
		total += t.Bytes
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\tin %s\t%s\n", termsafe.Line(t.ID), termsafe.Line(orDash(projects[t.ProjectID])), termsafe.Line(orDash(t.Branch)),
			roughly(now.Sub(t.Deleted)), roughly(t.Purge.Sub(now)), humanBytes(t.Bytes))
	}
	tw.Flush()
	fmt.Fprintf(env.Stdout, "%d %s, %s: `sandbar trash restore ID` brings one back, `sandbar trash empty` deletes them for good\n",
		len(ts), plural(len(ts), "session", "sessions"), humanBytes(total))
	return nil
}

func trashRestore(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar trash restore")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar trash restore: give session ids (`sandbar trash ls` lists them)"}
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	for _, ref := range fs.Args() {
		s, err := e.Restore(ctx, ref)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "restored session %s (%s)\n", s.ID, s.State)
	}
	return nil
}

func trashEmpty(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar trash empty")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	e, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	n, err := e.EmptyTrash(ctx, fs.Args())
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted %d %s for good\n", n, plural(n, "session", "sessions"))
	return nil
}

// keepWords says a duration of whole days, as the trash keeps sessions.
func keepWords(d time.Duration) string {
	if days := int(d / (24 * time.Hour)); days > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d %s", days, plural(days, "day", "days"))
	}
	return roughly(d)
}

// roughly is a duration to the unit that matters: "3 days", "5 hours",
// "12 minutes".
func roughly(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		n := int(d / (24 * time.Hour))
		return fmt.Sprintf("%d days", n)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	case d >= 2*time.Minute:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	case d > 0:
		return "a moment"
	}
	return "no time"
}
