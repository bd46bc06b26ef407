// Package cli is the sandbar command line: one subcommand per verb, each a
// thin layer that parses flags, calls the library that does the work
// (mostly a session.Service), and prints.
//
// It is not where the app is wired: main builds the parts (the store, the
// keyring, the hypervisors, the image builder, the session manager and
// the engine dialer) once and hands them in through Env. It reads no
// environment variable and starts no process of its own, and it boots no
// VM of a session: anything that touches one goes through the Service to
// the engine (`sandbar vm run`'s throwaway VM, which no session owns, is
// the one VM it boots itself).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"sandbar/app/config"
	"sandbar/app/hosts"
	"sandbar/app/imagebuild"
	"sandbar/app/secrets"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/vm"
)

// Env is everything a command may use from the outside world.
type Env struct {
	Paths  config.Paths
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// IsTerminal says whether Stdout is a terminal (progress bars, colour).
	IsTerminal bool
	// ErrIsTerminal says whether Stderr is a terminal.
	ErrIsTerminal bool
	// Term is the local terminal's TERM, passed to `sandbar shell`.
	Term string
	// WorkDir is the directory sandbar was started in.
	WorkDir string
	Logger  *slog.Logger
	Version string
	// Hypervisors are the VM backends built in; Backend names the one to
	// use ("" for the platform default).
	Hypervisors *vm.Registry
	Backend     string
	// Images finds and builds the guest images.
	Images *imagebuild.Builder
	// Store is the data directory's database, opened on first need.
	Store func() (*store.Store, error)
	// Secrets are the named secrets in the keyring.
	Secrets func() (*secrets.Secrets, error)
	// Sessions are the data directory's sessions as this process sees
	// them: read here, and sent to the engine (started when none answers)
	// for anything that touches a VM.
	Sessions func(ctx context.Context) (session.Service, error)
	// Manager is the session manager that runs VMs in this process: what
	// `sandbar serve` makes the engine.
	Manager func(ctx context.Context) (*session.Manager, error)
	// Hosts are the remote machines sessions can run on (nil: none are
	// wired).
	Hosts func() (*hosts.Hosts, error)
}

// ExitError carries a process exit code out of a command without printing
// anything more (the command already said what happened).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// UsageError is a malformed command line; main prints it with the usage.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
	sub     []command
}

func commands() []command {
	return []command{
		{name: "image", summary: "build and inspect the guest image", sub: []command{
			{name: "build", summary: "build the guest image (kernel, initramfs, root and agent disks)", run: imageBuild},
			{name: "ls", summary: "list built guest images", run: imageList},
			{name: "path", summary: "print the directory that holds guest images", run: imagePath},
			{name: "pull", summary: "pull an OCI image into read-only roots for project environments: sandbar image pull [--platform OS/ARCH] REF", run: imagePull},
		}},
		{name: "vm", summary: "boot throwaway VMs from the guest image", sub: []command{
			{name: "run", summary: "run a command in a throwaway VM: sandbar vm run [flags] -- CMD [ARGS...]", run: vmRun},
		}},
		{name: "project", summary: "add and list projects (repositories)", sub: []command{
			{name: "add", summary: "add repositories: sandbar project add PATH...", run: projectAdd},
			{name: "ls", summary: "list projects", run: projectList},
			{name: "secrets", summary: "choose the secrets a project's sessions get: sandbar project secrets PROJECT [NAME...]", run: projectSecrets},
			{name: "trust", summary: "review the repository's own settings and trust or ignore them: sandbar project trust [PROJECT] [--yes]", run: projectTrust},
			{name: "sudo", summary: "let a project's agent use sudo inside its VM, or not: sandbar project sudo PROJECT [on|off]", run: projectSudo},
		}},
		{name: "env", summary: "a project's environment (devcontainer.json, image, features, commands): sandbar env [--json] [PROJECT]", run: envShow},
		{name: "start", summary: "start an agent session: sandbar start [--repo PATH | PROJECT] [flags]", run: start},
		{name: "ls", summary: "list sessions", run: list},
		{name: "logs", summary: "print a session's log, readable (--json: Claude Code's stream as it is): sandbar logs [-f] [--json] [--raw] ID", run: logs},
		{name: "chat", summary: "send a message to a session's agent (--wait: and show its answer): sandbar chat [--wait] ID TEXT", run: chat},
		{name: "interrupt", summary: "end the agent's current turn; the session runs on and waits for a message: sandbar interrupt ID", run: interruptCmd},
		{name: "sync", summary: "bring your current branch into a session's clone as origin/<branch>, then merge, rebase or ask the agent: sandbar sync ID [--merge | --rebase | --ask]", run: syncCmd},
		{name: "commit", summary: "save a running session's work and commit it on its branch, so merge takes it: sandbar commit ID [-m MESSAGE]", run: commitCmd},
		{name: "exec", summary: "run a command in a session's VM: sandbar exec ID -- CMD...", run: execCmd},
		{name: "shell", summary: "open a terminal in a session's VM: sandbar shell ID [-- CMD...]", run: shellCmd},
		{name: "rename", summary: "give a session a new title: sandbar rename ID TITLE", run: rename},
		{name: "stop", summary: "stop a session", run: stop},
		{name: "suspend", summary: "save a running session's VM to its directory and end it: sandbar suspend ID", run: suspend},
		{name: "resume", summary: "bring a suspended session back, or run one paused on a full disk again: sandbar resume ID", run: resume},
		{name: "restart", summary: "restart a stopped, failed or interrupted session", run: restart},
		{name: "changes", summary: "list a session's changed files: sandbar changes [--json] ID", run: changesCmd},
		{name: "export", summary: "write a read-only copy of a session's files and print its folder: sandbar export ID", run: exportCmd},
		{name: "diff", summary: "print one changed file's diff: sandbar diff [--raw] ID PATH", run: diffCmd},
		{name: "merge", summary: "create the session's branch in its repository (--into: merge into the current branch; --stash: stash your uncommitted changes around it)", run: merge},
		{name: "net", summary: "what a session's VM tried to reach, and what it may: sandbar net ID [allow|deny TARGET]", run: netCmd},
		{name: "ports", summary: "a session's ports published on this machine: sandbar ports ID [publish GUEST[:HOST]]", run: portsCmd},
		{name: "rm", summary: "move sessions to the trash (--purge: delete them for good)", run: remove},
		{name: "trash", summary: "deleted sessions, kept for a week: sandbar trash ls | restore ID | empty [ID...]", sub: []command{
			{name: "ls", summary: "list the sessions in the trash", run: trashList},
			{name: "restore", summary: "bring sessions back from the trash: sandbar trash restore ID...", run: trashRestore},
			{name: "empty", summary: "delete sessions in the trash for good (all, or those named)", run: trashEmpty},
		}},
		{name: "secrets", summary: "keep API keys and tokens in the keyring", sub: []command{
			{name: "set", summary: "set a secret (value from standard input or a hidden prompt)", run: secretsSet},
			{name: "ls", summary: "list secret names", run: secretsList},
			{name: "rm", summary: "delete secrets", run: secretsRemove},
		}},
		{name: "hosts", summary: "remote machines sessions can run on: sandbar hosts [add NAME ssh://user@host | check NAME | prune NAME | rm NAME]", run: hostsCmd},
		{name: "doctor", summary: "check this machine can run Sandbar, and say how to fix what is missing", run: doctor},
		{name: "serve", summary: "run the engine without the GUI (started by other commands as needed)", run: serve},
		{name: "version", summary: "print the version", run: func(_ context.Context, env *Env, _ []string) error {
			fmt.Fprintf(env.Stdout, "sandbar %s\n", env.Version)
			return nil
		}},
	}
}

// Run executes the command line args (without the program name).
func Run(ctx context.Context, env *Env, args []string) error {
	cmds := commands()
	path := []string{"sandbar"}
	for {
		if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			usage(env.Stdout, path, cmds)
			return nil
		}
		c, ok := find(cmds, args[0])
		if !ok {
			return UsageError{Msg: fmt.Sprintf("unknown command %q: run `%s help`", strings.Join(append(path[1:], args[0]), " "), strings.Join(path, " "))}
		}
		path = append(path, c.name)
		args = args[1:]
		if c.run != nil {
			return c.run(ctx, env, args)
		}
		cmds = c.sub
	}
}

func find(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer, path []string, cmds []command) {
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", strings.Join(path, " "))
	sorted := append([]command(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun `%s <command> -h` for a command's flags.\n", strings.Join(path, " "))
}

// newFlags makes a flag set that reports errors as UsageError, not exit(2).
func newFlags(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parse parses flags for a command that takes no positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError{Msg: fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// parseArgs parses flags and leaves positional arguments in fs.Args().
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitError{Code: 0}
		}
		return UsageError{Msg: err.Error()}
	}
	return nil
}

// sessions is the data directory's sessions, as main wired them.
func sessions(ctx context.Context, env *Env) (session.Service, error) {
	if env.Sessions == nil {
		return nil, errors.New("no session service is wired into this sandbar")
	}
	return env.Sessions(ctx)
}
