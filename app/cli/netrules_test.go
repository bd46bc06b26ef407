package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/net/policy"
	"sandbar/app/session/sessiontest"
)

// TestNetRulesShowTheDefaults: `sandbar net rules` with no rules of the
// person's shows the default allowlist (commented out, so the output
// still reads as no rules to --set), and `net rules --defaults` prints it
// plain; it was shown nowhere.
func TestNetRulesShowTheDefaults(t *testing.T) {
	env := sessiontest.New(t)
	_, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}

	out, err := run("net", "rules")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "# no sandbar network rules: only the default allowlist applies") || !strings.Contains(out, "#   allow api.anthropic.com\n") || !strings.Contains(out, "#   allow github.com read\n") {
		t.Errorf("net rules with none of the person's:\n%s", out)
	}
	if f, err := policy.Parse([]byte(out), policy.SourceSandbar); err != nil || len(f.Rules) != 0 {
		t.Errorf("the output reads as %d rules (%v), want none: --set of it would add them", len(f.Rules), err)
	}

	out, err = run("net", "rules", "--defaults")
	if err != nil {
		t.Fatal(err)
	}
	if out != policy.DefaultText() {
		t.Errorf("net rules --defaults printed:\n%s", out)
	}
	if f, err := policy.Parse([]byte(out), policy.SourceSandbar); err != nil || len(f.Rules) != len(policy.Defaults()) {
		t.Errorf("--defaults printed %d rules (%v), want the %d of the default allowlist", len(f.Rules), err, len(policy.Defaults()))
	}
	var usage UsageError
	if _, err := run("net", "rules", "--defaults", "--project", "x"); !errors.As(err, &usage) {
		t.Errorf("--defaults with --project: %v, want a usage error", err)
	}
}
