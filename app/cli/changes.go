package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"sandbar/app/workspace"
)

func changesCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar changes")
	asJSON := fs.Bool("json", false, "print JSON: the files, commits ahead and diffstat (workspace.Changes)")
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
	return nil
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
		fmt.Fprintln(w, "\n"+terminalSafe(st))
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
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return UsageError{Msg: "sandbar diff: give a session id and one changed file: sandbar diff ID PATH (`sandbar changes ID` lists them)"}
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
	_, err = io.WriteString(env.Stdout, terminalSafe(d))
	return err
}

// quoteName is a path as printed: quoted, with escapes, when it holds
// anything a terminal would act on or a reader would misread.
func quoteName(p string) string {
	if terminalSafe(p) == p && !strings.ContainsAny(p, "\"\\\n\t") {
		return p
	}
	return fmt.Sprintf("%q", p)
}

// terminalSafe shows text from a session's VM as text: control
// characters (but newline and tab), C1 controls, bidirectional overrides
// and bytes that are not UTF-8 become visible escapes, so nothing in it
// can move the cursor, recolour, retitle or reorder the person's
// terminal.
func terminalSafe(s string) string {
	clean := true
	for i, r := range s {
		if unsafeRune(r) || r == utf8.RuneError && isBadByte(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isBadByte(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n', r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

// isBadByte reports whether the rune at s[i] decoded as RuneError because
// the byte is not UTF-8 (not because U+FFFD is written there).
func isBadByte(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}
