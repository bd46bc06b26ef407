package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	checkup "sandbar/app/doctor" // doctor is the command
)

func doctor(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "sandbar doctor")
	asJSON := fs.Bool("json", false, "print the checks as a JSON array of {name, ok, warn, detail, fix}")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: sandbar doctor [-json]\n\n"+
			"Checks that this machine can run Sandbar (hypervisor, guest image, keyring,\n"+
			"storage, git) and says how to fix what is missing. Exits 1 if anything\n"+
			"Sandbar needs is missing.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	d := &checkup.Doctor{Paths: env.Paths, Hypervisors: env.Hypervisors, Backend: env.Backend}
	checks := d.Checks(ctx)
	results := make([]checkup.Check, 0, len(checks))
	for _, check := range checks {
		r := check()
		results = append(results, r)
		// A line as soon as its check is done: the hypervisor's may take
		// a trial boot.
		if !*asJSON {
			printCheck(env.Stdout, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(results); err != nil {
			return fmt.Errorf("write the checks: %w", err)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, r := range results {
		if !r.OK {
			return ExitError{Code: 1}
		}
	}
	return nil
}

// printCheck writes one check as a line, and its fix indented below it.
func printCheck(w io.Writer, r checkup.Check) {
	const width = 12
	fmt.Fprintf(w, "%s %-*s %s\n", r.Symbol(), width, r.Name, r.Detail)
	if r.Fix != "" && (!r.OK || r.Warn) {
		fmt.Fprintf(w, "  %-*s fix: %s\n", width, "", r.Fix)
	}
}

// oneLine shortens a low-level error to one line of reasonable length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 160
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// humanBytes says n bytes as the rest of Sandbar does (doctor's).
func humanBytes(n int64) string { return checkup.HumanBytes(n) }
