package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"sandbar/app/cli/termsafe"
)

// `sandbar hosts`: the remote machines sessions can run on.

const hostsUsage = "usage: sandbar hosts [ls | add NAME ssh://user@host[:port] [--dir DIR] [--trust SHA256:...] | check NAME | prune NAME [--yes] | rm NAME]"

func hostsCmd(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return hostsList(ctx, env, nil)
	}
	switch args[0] {
	case "ls":
		return hostsList(ctx, env, args[1:])
	case "add":
		return hostsAdd(ctx, env, args[1:])
	case "check":
		return hostsCheck(ctx, env, args[1:])
	case "rm":
		return hostsRemove(ctx, env, args[1:])
	case "prune":
		return hostsPrune(ctx, env, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(env.Stdout, hostsUsage)
		return nil
	}
	return UsageError{Msg: fmt.Sprintf("sandbar hosts: unknown command %q\n%s", args[0], hostsUsage)}
}

func hostsList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar hosts ls")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := env.Store()
	if err != nil {
		return err
	}
	hs, err := st.Hosts(ctx)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		fmt.Fprintln(env.Stdout, "no remote hosts: add one with `sandbar hosts add NAME ssh://user@host`; sessions run on this machine")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tLIVE\tCHECKED\tSTATUS")
	for _, h := range hs {
		live, _ := st.LiveSessionsOn(ctx, h.Name)
		checked := "never"
		if !h.Checked.IsZero() {
			checked = time.Since(h.Checked).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", termsafe.Line(h.Name), termsafe.Line(h.URL), len(live), checked, termsafe.Line(clip(h.Status, 100)))
	}
	return tw.Flush()
}

func hostsAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar hosts add")
	dir := fs.String("dir", "", "Sandbar's folder on the host (default ~/.cache/sandbar-host of the SSH user)")
	trust := fs.String("trust", "", "the host key's fingerprint (SHA256:...), checked on the host, for a host not yet in ~/.ssh/known_hosts: it is added there")
	if err := parseArgs(fs, reorder(args, map[string]bool{"--dir": true, "-dir": true, "--trust": true, "-trust": true})); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return UsageError{Msg: "sandbar hosts add: give a name and an address: sandbar hosts add NAME ssh://user@host[:port]"}
	}
	if env.Hosts == nil {
		return errors.New("remote hosts are not wired into this sandbar")
	}
	hs, err := env.Hosts()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "checking %s...\n", fs.Arg(1))
	a, err := hs.Add(ctx, fs.Arg(0), fs.Arg(1), *dir, *trust)
	if err != nil {
		return err
	}
	for _, w := range a.Warnings {
		fmt.Fprintln(env.Stderr, "warning: "+w)
	}
	fmt.Fprintf(env.Stdout, "added %s (%s): %s\nstart a session there with `sandbar start --on %s`\n", a.Host.Name, a.Host.URL, a.Facts.Summary(), a.Host.Name)
	return nil
}

func hostsCheck(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return UsageError{Msg: "sandbar hosts check: give one host name"}
	}
	if env.Hosts == nil {
		return errors.New("remote hosts are not wired into this sandbar")
	}
	hs, err := env.Hosts()
	if err != nil {
		return err
	}
	f, err := hs.Check(ctx, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s: ready: %s\n", args[0], f.Summary())
	if !f.KVM {
		fmt.Fprintf(env.Stderr, "warning: %s has no usable KVM: sessions there run under software emulation, about 10x slower\n", args[0])
	}
	return nil
}

func hostsRemove(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return UsageError{Msg: "sandbar hosts rm: give one host name"}
	}
	st, err := env.Store()
	if err != nil {
		return err
	}
	if err := st.RemoveHost(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "removed %s; its files there (~/.cache/sandbar-host or its --dir) are left for you to delete\n", args[0])
	return nil
}

func hostsPrune(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar hosts prune")
	yes := fs.Bool("yes", false, "stop and delete what is listed (default: only list it)")
	if err := parseArgs(fs, reorder(args, nil)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar hosts prune: give one host name: sandbar hosts prune NAME [--yes]"}
	}
	if env.Hosts == nil {
		return errors.New("remote hosts are not wired into this sandbar")
	}
	hs, err := env.Hosts()
	if err != nil {
		return err
	}
	left, err := hs.Prune(ctx, fs.Arg(0), *yes)
	for _, l := range left {
		what := []string{}
		if l.Running {
			what = append(what, "a running VM (started by "+termsafe.Line(l.Owner)+")")
		}
		if l.Folder {
			what = append(what, "its folder (scratch disk)")
		}
		verb := "left over"
		if *yes && err == nil {
			verb = "removed"
		}
		fmt.Fprintf(env.Stdout, "%s %s: %s\n", verb, termsafe.Line(l.Name), strings.Join(what, " and "))
	}
	if err != nil {
		return err
	}
	switch {
	case len(left) == 0:
		fmt.Fprintf(env.Stdout, "nothing left over on %s\n", fs.Arg(0))
	case !*yes:
		fmt.Fprintf(env.Stdout, "no session here owns these: remove them with `sandbar hosts prune %s --yes`\n", fs.Arg(0))
	}
	return nil
}

// reorder moves flags (and the values of those in takesValue) before the
// positional arguments, so `hosts add NAME URL --dir D` parses as the
// person wrote it.
func reorder(args []string, takesValue map[string]bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if takesValue[a] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}

// sessionHosts maps each session that runs on a remote host to it; empty
// when none does or the store cannot say.
func sessionHosts(ctx context.Context, env *Env) map[string]string {
	if env.Store == nil {
		return nil
	}
	st, err := env.Store()
	if err != nil {
		return nil
	}
	m, err := st.SessionHosts(ctx)
	if err != nil {
		return nil
	}
	return m
}
