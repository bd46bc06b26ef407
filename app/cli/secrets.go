package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"sandbar/app/session"
	"sandbar/app/store"
)

func secretsSet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar secrets set")
	host := fs.String("host", "", "broker the secret: it never enters a VM, and Sandbar puts it in requests to this host only (HTTPS)")
	header := fs.String("header", "", "with --host: the header that carries it (default Authorization)")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar secrets set [--host HOST [--header NAME]] NAME\n\nThe value is read from standard input, or asked for without echo on a terminal;\nit is never an argument, so it stays out of shell history and process lists.\n\nA secret sessions get (`sandbar project secrets`) enters the VM's environment,\nunless it is brokered (--host): then the VM holds a stand-in, and Sandbar swaps\nthe real value in on requests to that host alone. ANTHROPIC_API_KEY and\nCLAUDE_CODE_OAUTH_TOKEN are always brokered to the model API.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := interleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return UsageError{Msg: "sandbar secrets set: give one NAME; the value comes from standard input, never an argument"}
	}
	name := pos[0]
	var bind store.SecretBroker
	if *host != "" {
		if bind, err = session.SecretBinding(name, *host, *header); err != nil {
			return err
		}
	} else if *header != "" {
		return UsageError{Msg: "sandbar secrets set: --header goes with --host"}
	}
	value, err := readSecret(env, name)
	if err != nil {
		return err
	}
	st, err := env.Store()
	if err != nil {
		return err
	}
	sec, err := env.Secrets()
	if err != nil {
		return err
	}
	if err := sec.Set(ctx, name, value); err != nil {
		return err
	}
	if err := st.SetSecretBroker(ctx, name, bind); err != nil {
		return err
	}
	switch {
	case bind.Host != "":
		fmt.Fprintf(env.Stdout, "secret %s saved in the keyring, brokered: sessions hold a stand-in, and Sandbar puts the value in the %s header of HTTPS requests to %s\n", name, bind.Header, bind.Host)
	case session.ModelCredential(name):
		fmt.Fprintf(env.Stdout, "secret %s saved in the keyring; Sandbar's broker adds it to the agent's model API requests: it never enters a VM\n", name)
	default:
		fmt.Fprintf(env.Stdout, "secret %s saved in the keyring; sessions of the projects that list it get it as $%s (sandbar project secrets PROJECT %s)\n", name, name, name)
	}
	return nil
}

// readSecret reads a value: a hidden prompt on a terminal, else all of
// standard input without its final newline.
func readSecret(env *Env, name string) (string, error) {
	if f, ok := env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(env.Stderr, "value for %s (not shown): ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(env.Stderr)
		if err != nil {
			return "", fmt.Errorf("read the value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(bufio.NewReader(io.LimitReader(env.Stdin, 1<<20)))
	if err != nil {
		return "", fmt.Errorf("read the value from standard input: %w", err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("no value on standard input: pipe it in, as in `printenv %s | sandbar secrets set %s`", name, name)
	}
	return v, nil
}

func secretsList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar secrets ls")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := env.Store()
	if err != nil {
		return err
	}
	sec, err := env.Secrets()
	if err != nil {
		return err
	}
	names, err := sec.Names(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(env.Stdout, "no secrets: Claude Code needs one, e.g. `sandbar secrets set ANTHROPIC_API_KEY`")
		return nil
	}
	brokers, err := st.SecretBrokers(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		switch b, ok := brokers[n]; {
		case ok:
			fmt.Fprintf(env.Stdout, "%s\tbrokered to %s (%s)\n", n, b.Host, b.Header)
		case session.ModelCredential(n):
			fmt.Fprintf(env.Stdout, "%s\tbrokered to the model API\n", n)
		default:
			fmt.Fprintln(env.Stdout, n)
		}
	}
	return nil
}

func secretsRemove(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar secrets rm")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return UsageError{Msg: "sandbar secrets rm: give secret names"}
	}
	s, err := env.Secrets()
	if err != nil {
		return err
	}
	for _, n := range fs.Args() {
		if err := s.Delete(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "secret %s deleted\n", n)
	}
	return nil
}
