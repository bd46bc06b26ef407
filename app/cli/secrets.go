package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"sandbar/app/secrets"
)

func secretsSet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar secrets set")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar secrets set NAME\n\nThe value is read from standard input, or asked for without echo on a terminal;\nit is never an argument, so it stays out of shell history and process lists.")
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return UsageError{Msg: "sandbar secrets set: give one NAME; the value comes from standard input, never an argument"}
	}
	name := fs.Arg(0)
	value, err := readSecret(env, name)
	if err != nil {
		return err
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := secrets.New(st, secrets.Options{}).Set(ctx, name, value); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "secret %s saved in the keyring; sessions get it as $%s\n", name, name)
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
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	names, err := secrets.New(st, secrets.Options{}).Names(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(env.Stdout, "no secrets: Claude Code needs one, e.g. `sandbar secrets set ANTHROPIC_API_KEY`")
		return nil
	}
	for _, n := range names {
		fmt.Fprintln(env.Stdout, n)
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
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	s := secrets.New(st, secrets.Options{})
	for _, n := range fs.Args() {
		if err := s.Delete(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "secret %s deleted\n", n)
	}
	return nil
}
