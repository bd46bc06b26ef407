package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/workspace"
)

// TestProjectTrust: `sandbar project trust` shows what the repository's
// settings ask for, escaped (an agent may have written them), refuses
// without a terminal or --yes, saying what to do, and with --yes
// records the trust by hash.
func TestProjectTrust(t *testing.T) {
	env := sessiontest.New(t)
	svc, cli, stdout, _ := engineFor(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := env.Repo(t, "trust répo")
	for rel, content := range map[string]string{
		".sandbar/network":                "allow a.example\nallow 0.0.0.0/0:*\n",
		".sandbarinclude":                 ".env\n",
		".devcontainer/devcontainer.json": "{\"name\": \"\x1b]0;pwned\x07\x1b[2J\u202eevil\"}\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := svc.AddProject(ctx, repo); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		stdout.Reset()
		err := Run(ctx, cli, args)
		return stdout.String(), err
	}

	out, err := run("project", "trust", repo)
	if err == nil || !strings.Contains(err.Error(), "not a terminal") || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("without a terminal or --yes: %v", err)
	}
	for _, want := range []string{
		".sandbar/network (network rules for its sessions): not trusted yet, so not used",
		"    +allow a.example\n",
		"refused as a whole, even if trusted: line 2: `allow 0.0.0.0/0:*`: a repository's network file may not use a `*` port; put wider rules in your own settings: sandbar net rules --project",
		".sandbarinclude (which of your ignored files (.env, keys) go into its sessions' VMs): not trusted yet",
		".devcontainer (the environment its sessions run in, and what its image is built from): not trusted yet",
		`\x1b]0;pwned\x07\x1b[2J\u202eevil`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sandbar project trust lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("sandbar project trust passed control characters to the terminal:\n%q", out)
	}
	if rev, err := svc.RepoTrust(ctx, repo); err != nil || len(rev.Pending()) != 3 {
		t.Fatalf("after a refused trust: %d pending, %v", len(rev.Pending()), err)
	}

	out, err = run("project", "trust", "--yes", repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"trusted .sandbarinclude: sessions started from now on use it",
		"trusted .sandbar/network, but it is still refused as a whole, so sessions do not use it: line 2: `allow 0.0.0.0/0:*`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sandbar project trust --yes lacks %q:\n%s", want, out)
		}
	}
	rev, err := svc.RepoTrust(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rev.Proposals {
		if p.State != session.TrustTrusted {
			t.Errorf("%s after --yes: %s", p.Kind, p.State)
		}
	}
	if string(rev.IncludeLists()) != ".env\n\n" || rev.NetworkRules() != nil {
		t.Errorf("used after trust: include %q, network %q", rev.IncludeLists(), rev.NetworkRules())
	}
	if out, err := run("project", "trust", repo); err != nil || !strings.Contains(out, "nothing waits for your trust") {
		t.Errorf("once trusted: %v\n%s", err, out)
	}

	// A change is shown as a diff, and --ignore keeps it out without
	// asking again.
	if err := os.WriteFile(filepath.Join(repo, ".sandbarinclude"), []byte(".env\nid_rsa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run("project", "trust", "--ignore", repo)
	if err != nil || !strings.Contains(out, "changes since the version you trusted:\n    --- .sandbarinclude\n     .env\n    +id_rsa\n") || !strings.Contains(out, "ignored .sandbarinclude") {
		t.Errorf("--ignore of a change: %v\n%s", err, out)
	}
	if rev, _ := svc.RepoTrust(ctx, repo); rev.Proposal(workspace.SettingsInclude).State != session.TrustIgnored || len(rev.Pending()) != 0 {
		t.Errorf("after --ignore: %+v", rev.Proposal(workspace.SettingsInclude))
	}
}
