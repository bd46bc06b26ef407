package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sandbar/app/cli/termsafe"
	"sandbar/app/workspace"
)

func changesCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar changes")
	asJSON := fs.Bool("json", false, "print JSON: the files, commits ahead, diffstat and steering files (workspace.Changes)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar changes: give one session id: sandbar changes [--json] ID"}
	}
	// The engine reads a live session's work (only the process that runs
	// a VM can ask it); a stopped one's is read here, from what it saved.
	w, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ch, err := w.Changes(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, ch)
	}
	printChanges(env.Stdout, ch)
	printSteering(env.Stdout, fs.Arg(0), ch.Steering, "")
	return nil
}

// printSteering names the steering files among a session's changes (or
// a merge's), one a line with what each steers, and says how to see each
// one's diff; those Sandbar uses only once trusted say that they will
// need that trust again. after is added to the heading ("" for none).
func printSteering(w io.Writer, id string, files []workspace.Steering, after string) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d %s that steer tools on your machine%s (see each with `sandbar diff %s FILE`):\n", len(files), plural(len(files), "file", "files"), after, id)
	for _, f := range files {
		fmt.Fprintf(w, "  %s %-9s %s: %s\n", statusLetter(f.Status), f.Status, quoteName(f.Path), f.Why)
		if f.NeedsTrust {
			fmt.Fprintf(w, "    this changes %s, which will need your trust again before Sandbar uses it\n", quoteName(f.Path))
		}
	}
}

// printChanges writes the files, one a line with git's letter and the
// status in words, then the commits and git's diffstat. Everything in it
// came from the agent's VM: it is printed with control characters shown
// as escapes, never passed to the terminal.
func printChanges(w io.Writer, ch workspace.Changes) {
	if len(ch.Files) == 0 && ch.Ahead == 0 {
		fmt.Fprintln(w, "no changes since the session started")
		return
	}
	for _, f := range ch.Files {
		name := quoteName(f.Path)
		if f.From != "" {
			name = quoteName(f.From) + " -> " + name
		}
		fmt.Fprintf(w, "%s %-9s %s\n", statusLetter(f.Status), f.Status, name)
	}
	fmt.Fprintf(w, "\n%d %s changed, %d %s ahead of the base\n", len(ch.Files), plural(len(ch.Files), "file", "files"), ch.Ahead, plural(ch.Ahead, "commit", "commits"))
	if st := strings.TrimRight(ch.DiffStat, "\n"); st != "" {
		fmt.Fprintln(w, "\n"+termsafe.Text(st))
	}
}

func statusLetter(s string) string {
	switch s {
	case "added":
		return "A"
	case "deleted":
		return "D"
	case "renamed":
		return "R"
	case "untracked":
		return "?"
	case "unmerged":
		return "U"
	}
	return "M"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func diffCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar diff")
	raw := fs.Bool("raw", false, "print the diff's bytes as they are, control characters and escape sequences included (default: shown as escapes)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return UsageError{Msg: "sandbar diff: give a session id and one changed file: sandbar diff [--raw] ID PATH (`sandbar changes ID` lists them)"}
	}
	id, p := fs.Arg(0), strings.TrimPrefix(fs.Arg(1), "./")
	w, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	ch, err := w.Changes(ctx, id)
	if err != nil {
		return err
	}
	var f *workspace.FileChange
	for i := range ch.Files {
		if ch.Files[i].Path == p || ch.Files[i].From == p {
			f = &ch.Files[i]
			break
		}
	}
	if f == nil {
		return fmt.Errorf("%s is not among the files session %s changed: `sandbar changes %s` lists them (paths are relative to the repository's top)", quoteName(p), id, id)
	}
	d, err := w.FileDiff(ctx, id, *f)
	if err != nil {
		return err
	}
	if !*raw {
		d = termsafe.Text(d)
	}
	_, err = io.WriteString(env.Stdout, d)
	return err
}

// quoteName is a path as printed: quoted, with escapes, when it holds
// anything a terminal would act on or a reader would misread.
func quoteName(p string) string {
	if termsafe.Clean(p) && !strings.ContainsAny(p, "\"\\\n\t") {
		return p
	}
	return fmt.Sprintf("%q", p)
}
