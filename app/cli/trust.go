package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"sandbar/app/cli/termsafe"
	"sandbar/app/session"
	"sandbar/app/store"
)

// projectTrust shows a project's repository settings files (network
// file, include lists, environment), what each asks for and the diff
// since the last trusted version, and records the person's decision: a
// y/N question on a terminal, --yes to trust, --ignore to ignore.
// Everything shown from the files is the repository's text, which an
// agent may have written: it is printed escaped.
func projectTrust(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar project trust")
	yes := fs.Bool("yes", false, "trust the repository's settings as shown, without asking")
	ignore := fs.Bool("ignore", false, "ignore the repository's settings as shown: not used, and not asked about again until they change")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar project trust [PROJECT] [--yes | --ignore]\n\nShows the repository's .sandbar/network, .sandbarinclude/.worktreeinclude and\n.devcontainer, and the changes since you last trusted them. Sessions use them\nonly once you trust that exact content.")
		fs.PrintDefaults()
	}
	ref, given, err := projectArgRef(env, fs, args, "sandbar project trust")
	if err != nil {
		return err
	}
	if *yes && *ignore {
		return UsageError{Msg: "sandbar project trust: give --yes or --ignore, not both"}
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	rev, err := svc.RepoTrust(ctx, ref)
	if err != nil {
		if !given {
			return fmt.Errorf("%w (give the project: sandbar project trust PROJECT)", err)
		}
		return err
	}
	pending := printRepoReview(env.Stdout, rev)
	if len(pending) == 0 {
		return nil
	}
	hashes := map[string]string{}
	for _, p := range pending {
		hashes[p.Kind] = p.Hash
	}
	decision := ""
	switch {
	case *yes:
		decision = store.TrustTrusted
	case *ignore:
		decision = store.TrustIgnored
	default:
		in, ok := env.Stdin.(*os.File)
		if !ok || !term.IsTerminal(int(in.Fd())) {
			return fmt.Errorf("not trusted: this is not a terminal, so there is no one to ask: read the above, then run `sandbar project trust %s --yes` to trust it, or --ignore to ignore it", shellArg(ref))
		}
		fmt.Fprintf(env.Stdout, "Trust this content for the sessions of %s? [y/N] ", termsafe.Text(rev.Project.Name))
		line, err := bufio.NewReader(io.LimitReader(env.Stdin, 1024)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the answer: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			decision = store.TrustTrusted
		default:
			fmt.Fprintln(env.Stdout, "not trusted: nothing changed")
			return nil
		}
	}
	if err := svc.DecideRepoTrust(ctx, ref, decision, hashes); err != nil {
		return err
	}
	for _, p := range pending {
		switch {
		case decision == store.TrustIgnored:
			fmt.Fprintf(env.Stdout, "ignored %s: sessions do not use it, and Sandbar does not ask again until it changes\n", p.Label())
		case p.Refused != "":
			fmt.Fprintf(env.Stdout, "trusted %s, but it is still refused as a whole, so sessions do not use it: %s\n", p.Label(), termsafe.Text(p.Refused))
		default:
			fmt.Fprintf(env.Stdout, "trusted %s: sessions started from now on use it\n", p.Label())
		}
	}
	return nil
}

// printRepoReview writes a project's repository settings, kind by kind,
// and returns those waiting for a decision.
func printRepoReview(w io.Writer, rev session.RepoReview) []session.RepoProposal {
	fmt.Fprintf(w, "Repository settings of %s (%s)\n", termsafe.Text(rev.Project.Name), termsafe.Text(rev.Root))
	var pending []session.RepoProposal
	for _, p := range rev.Proposals {
		if !p.Present() {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s): %s\n", p.Label(), p.What(), session.TrustStateWords(p.State))
		for _, f := range p.Files {
			if f.Problem != "" {
				fmt.Fprintf(w, "  %s: left out: %s\n", quoteName(f.Path), termsafe.Text(f.Problem))
			}
		}
		if p.Refused != "" {
			fmt.Fprintf(w, "  refused as a whole, even if trusted: %s\n", termsafe.Text(p.Refused))
		}
		if !p.Pending() {
			continue
		}
		pending = append(pending, p)
		if p.Trusted.Present() {
			fmt.Fprintln(w, "  changes since the version you trusted:")
		} else {
			fmt.Fprintln(w, "  what it asks for (never trusted before):")
		}
		for _, l := range strings.Split(strings.TrimRight(p.Diff, "\n"), "\n") {
			fmt.Fprintln(w, "    "+termsafe.Text(l))
		}
	}
	if len(pending) == 0 {
		fmt.Fprintln(w, "\nnothing waits for your trust")
	} else {
		fmt.Fprintln(w)
	}
	return pending
}

// shellArg quotes a word for a command line to copy, when it needs it.
func shellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/+=:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(termsafe.Text(s), "'", `'\''`) + "'"
}

// projectArgRef parses a verb's flags and at most one project among its
// arguments: that project, or the working directory (given false).
func projectArgRef(env *Env, fs *flag.FlagSet, args []string, verb string) (ref string, given bool, err error) {
	pos, err := interleaved(fs, args)
	if err != nil {
		return "", false, err
	}
	switch len(pos) {
	case 0:
		return env.WorkDir, false, nil
	case 1:
		return pos[0], true, nil
	}
	return "", false, UsageError{Msg: verb + ": give at most one project (id, name or path)"}
}
