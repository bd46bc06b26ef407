package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"sandbar/app/cli/termsafe"
	"sandbar/app/env/ociimage"
	"sandbar/app/session"
)

// `sandbar env`: a project's environment.

func envShow(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "build" {
		return envBuild(ctx, env, args[1:])
	}
	fs := newFlags(env, "sandbar env")
	asJSON := fs.Bool("json", false, "print it as JSON")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar env [--json] [PROJECT]\n       sandbar env build [PROJECT]\n\nShows the project's environment: the repository's devcontainer.json and\nwhether you trusted it, its image (pulled or not), features and commands.\nSessions run in it once you trust the file (sandbar project trust);\nsandbar start --env default runs one in Sandbar's own image.")
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
// it pulls the image its trusted devcontainer.json names, so that no
// session waits for the pull. (A project named "build" is given by its
// id or path.)
func envBuild(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar env build")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: sandbar env build [PROJECT]\n\nPulls the image the project's trusted devcontainer.json names, so that its\nsessions start without waiting for it.")
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
	case v.Image == "":
		fmt.Fprintf(env.Stdout, "nothing to pull: %s names no image (an image it builds from a Dockerfile is built in a VM when a session starts, and cached); its commands run in each new session\n", termsafe.Line(v.File))
		return nil
	}
	if err := pullShowing(ctx, env, v.Image, ociimage.PullOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "the project's sessions start on it without a pull\n")
	return nil
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
