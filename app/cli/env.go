package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sandbar/app/cli/termsafe"
	"sandbar/app/env/ociimage"
	"sandbar/app/session"
	"sandbar/app/store"
)

// `sandbar env`: a project's environment.

func envShow(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "build" {
		return envBuild(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "logs" {
		return envLogs(ctx, env, args[1:])
	}
	fs := newFlags(env, "sandbar env")
	asJSON := fs.Bool("json", false, "print it as JSON")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar env [--json] [PROJECT]\n       sandbar env build [--rebuild] [PROJECT]\n       sandbar env logs [-f] [PROJECT]\n\nShows the project's environment: the repository's devcontainer.json and\nwhether you trusted it, its image (pulled or not), features and commands.\nSessions run in it once you trust the file (sandbar project trust);\nsandbar start --env default runs one in Sandbar's own image.")
		fs.PrintDefaults()
	}
	v, err := projectEnvironment(ctx, env, fs, args, "sandbar env")
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	printEnvironment(env, v)
	return nil
}

// printEnvironment prints v a fact a line, escaped: it is the
// repository's text.
func printEnvironment(env *Env, v session.EnvironmentView) {
	fmt.Fprintf(env.Stdout, "project %s\n", termsafe.Line(v.Project.Name))
	for _, l := range v.Words() {
		fmt.Fprintln(env.Stdout, termsafe.Line(l))
	}
	if v.Trust != "" && v.Source != "devcontainer" && v.Error == "" {
		fmt.Fprintf(env.Stdout, "to use it: sandbar project trust %s\n", termsafe.Line(v.Project.Name))
	}
}

// envBuild readies a project's environment before its first session:
// it pulls the image its trusted devcontainer.json names, then, when the
// file has features or creation commands, has the engine prepare the
// environment (or remake it, with --rebuild) and follows it, its log as
// it goes, to the end. A failed preparation exits non-zero with the
// command, its exit code and its log's tail. (A project named "build"
// or "logs" is given by its id or path.)
func envBuild(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar env build")
	rebuild := fs.Bool("rebuild", false, "prepare it again even when it is ready")
	quiet := fs.Bool("quiet", false, "print the steps, not the commands' output")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar env build [--rebuild] [--quiet] [PROJECT]\n\nPulls the image the project's trusted devcontainer.json names and prepares\nthe environment (features, onCreateCommand, updateContentCommand,\npostCreateCommand) once, in a VM, for the checked-out commit, so that its\nsessions start on it ready.")
		fs.PrintDefaults()
	}
	v, err := projectEnvironment(ctx, env, fs, args, "sandbar env build")
	if err != nil {
		return err
	}
	switch {
	case v.Error != "":
		return fmt.Errorf("the project's environment cannot be used: %s", termsafe.Line(v.Error))
	case v.Source != "devcontainer":
		printEnvironment(env, v)
		fmt.Fprintln(env.Stdout, "nothing to build: the project's sessions run in Sandbar's own image")
		return nil
	}
	if v.Image != "" {
		if err := pullShowing(ctx, env, v.Image, ociimage.PullOptions{}); err != nil {
			return err
		}
	}
	if v.Prepared == nil {
		if v.Image != "" {
			fmt.Fprintf(env.Stdout, "the project's sessions start on it without a pull\n")
		} else {
			fmt.Fprintf(env.Stdout, "nothing to prepare: %s names no image, no features and no creation commands\n", termsafe.Line(v.File))
		}
		return nil
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	asked := time.Now()
	p, err := svc.PrepareEnvironment(ctx, v.Project.Path, *rebuild)
	if err != nil {
		return err
	}
	if p.State == session.PrepReady {
		fmt.Fprintf(env.Stdout, "prepared environment %s is ready (made %s on %s): nothing to do (--rebuild prepares it again)\n", p.KeyShort, p.Made.Local().Format("2006-01-02 15:04"), short(p.Commit))
		return nil
	}
	fmt.Fprintf(env.Stdout, "preparing the environment on %s (key %s)\n", short(p.Commit), p.KeyShort)
	return followPreparation(ctx, env, svc, v.Project, p, asked, !*quiet)
}

// followPreparation prints the preparation p's steps (and its log, with
// showLog) until it ends, and returns its failure as an error. It ends
// when the project's environments hold p's key made since asked, ready
// or failed, whatever else the project prepares meanwhile.
func followPreparation(ctx context.Context, env *Env, svc session.Service, project store.Project, p session.PreparedView, asked time.Time, showLog bool) error {
	tail := &logFollower{path: p.Log, out: env.Stdout}
	step := ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if showLog {
			tail.follow()
		}
		all, err := svc.PreparedEnvironments(ctx)
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.ProjectID != project.ID || e.Key != p.Key || e.Made.Before(asked) {
				continue
			}
			if showLog {
				tail.path = e.Log // its folder moved into place: the same file
				tail.follow()
			}
			if e.State == session.PrepFailed {
				return fmt.Errorf("preparing the environment failed: %s\n(its log: sandbar env logs; fix the file and run sandbar env build --rebuild)", termsafe.Text(e.Error))
			}
			fmt.Fprintf(env.Stdout, "prepared environment %s ready: %s, %s to prepare (%s of it the commands); the project's sessions start on it\n",
				e.KeyShort, humanBytes(e.Size), e.Took.Round(time.Second), e.SetupTook.Round(time.Second))
			return nil
		}
		v, err := svc.Environment(ctx, project.Path)
		if err != nil {
			return err
		}
		if cur := v.Prepared; cur != nil && cur.State == session.PrepPreparing && cur.Key == p.Key {
			if cur.Log != "" {
				tail.path = cur.Log
			}
			if !showLog && cur.Step != step {
				step = cur.Step
				fmt.Fprintf(env.Stdout, "%s\n", termsafe.Line(step))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// logFollower prints what a log file gained since its last call, a
// line at a time, escaped: the preparing machine wrote it. Its path
// changes once, when the preparation's folder is moved into place: the
// same file, read on from where it was.
type logFollower struct {
	path    string
	out     io.Writer
	off     int64
	partial string
}

func (f *logFollower) follow() {
	if f.path == "" {
		return
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.Size() < f.off {
		f.off = 0 // a new file of the same name
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := fh.ReadAt(buf, f.off)
		if n > 0 {
			f.off += int64(n)
			text := f.partial + string(buf[:n])
			lines := strings.Split(text, "\n")
			f.partial = lines[len(lines)-1]
			if len(f.partial) > 64<<10 {
				f.partial = f.partial[:64<<10]
			}
			for _, l := range lines[:len(lines)-1] {
				fmt.Fprintln(f.out, termsafe.Line(l))
			}
		}
		if err != nil || n == 0 {
			return
		}
	}
}

// envLogs prints the newest preparation's log; with -f it follows a
// running one to its end.
func envLogs(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar env logs")
	follow := fs.Bool("f", false, "follow a running preparation's log to its end")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar env logs [-f] [PROJECT]\n\nPrints the log of the project's newest environment preparation: its\nfeatures' installs and its commands' output.")
		fs.PrintDefaults()
	}
	v, err := projectEnvironment(ctx, env, fs, args, "sandbar env logs")
	if err != nil {
		return err
	}
	if v.Prepared == nil || v.Prepared.Log == "" {
		return fmt.Errorf("project %s has no environment preparation yet (sandbar env build prepares one)", termsafe.Line(v.Project.Name))
	}
	p := *v.Prepared
	tail := &logFollower{path: p.Log, out: env.Stdout}
	tail.follow()
	if !*follow || p.State != session.PrepPreparing {
		return nil
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		tail.follow()
		v, err := svc.Environment(ctx, v.Project.Path)
		if err != nil {
			return err
		}
		if v.Prepared == nil || v.Prepared.State != session.PrepPreparing || v.Prepared.Key != p.Key {
			if v.Prepared != nil && v.Prepared.Key == p.Key {
				tail.path = v.Prepared.Log // moved into place when it ended
				tail.follow()
			}
			return nil
		}
	}
}

// projectEnvironment parses a verb's flags and its project (the working
// directory's when none is given) and reads the project's environment.
func projectEnvironment(ctx context.Context, env *Env, fs *flag.FlagSet, args []string, verb string) (session.EnvironmentView, error) {
	ref, given, err := projectArgRef(env, fs, args, verb)
	if err != nil {
		return session.EnvironmentView{}, err
	}
	svc, err := sessions(ctx, env)
	if err != nil {
		return session.EnvironmentView{}, err
	}
	v, err := svc.Environment(ctx, ref)
	if err != nil && !given {
		return v, fmt.Errorf("%w (give the project: %s PROJECT)", err, verb)
	}
	return v, err
}
