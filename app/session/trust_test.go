package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestRepoTrust: a repository's network file and include lists are used
// only once the person trusts that exact content, by hash. Untrusted,
// changed and ignored content is left out and the session's log says so;
// a trusted network file wider than a repository may add is refused
// whole, naming the line and the rule.
func TestRepoTrust(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	write := f.repoWriter(t)
	write(".gitignore", ".env\n")
	write(".env", "TOKEN=person-secret\n")
	write(".sandbar/network", "allow a.example\n")
	write(".sandbarinclude", ".env\n")
	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	review := func() RepoReview {
		t.Helper()
		r, err := f.m.RepoTrust(ctx, f.repo)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// start runs a session to its end and returns its log.
	start := func() (string, string) {
		t.Helper()
		return f.runToEnd(t)
	}
	hashes := func(r RepoReview, kinds ...string) map[string]string {
		m := map[string]string{}
		for _, k := range kinds {
			m[k] = r.Proposal(k).Hash
		}
		return m
	}

	// Never trusted: both pending, neither used.
	r := review()
	if n, i := r.Proposal(workspace.SettingsNetwork), r.Proposal(workspace.SettingsInclude); n.State != TrustUntrusted || i.State != TrustUntrusted || len(r.Pending()) != 2 {
		t.Fatalf("before any trust: %s %s, %d pending", n.State, i.State, len(r.Pending()))
	}
	if d := r.Proposal(workspace.SettingsNetwork).Diff; d != "--- .sandbar/network (new)\n+allow a.example\n" {
		t.Errorf("diff from nothing:\n%s", d)
	}
	if r.Proposal(workspace.SettingsEnvironment).State != TrustAbsent {
		t.Errorf("environment: %+v", r.Proposal(workspace.SettingsEnvironment))
	}
	id, log := start()
	if !strings.Contains(log, "This repository's .sandbar/network is not trusted yet, so it was not used: review it in Project Settings → Trust, or `sandbar project trust") ||
		!strings.Contains(log, "This repository's .sandbarinclude is not trusted yet") {
		t.Errorf("the log of a session with untrusted settings:\n%s", log)
	}
	if strings.Contains(log, "ignored files listed") {
		t.Errorf("untrusted include lists were used:\n%s", log)
	}
	if _, err := os.Stat(f.paths.SessionDir(id).NetworkRepo()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the untrusted network file was kept for the session: %v", err)
	}

	// Trusted: both used.
	if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, hashes(r, workspace.SettingsNetwork, workspace.SettingsInclude)); err != nil {
		t.Fatal(err)
	}
	if r = review(); r.Proposal(workspace.SettingsNetwork).State != TrustTrusted || len(r.Pending()) != 0 || len(r.Notes()) != 0 {
		t.Fatalf("after trust: %+v, notes %q", r.Proposals, r.Notes())
	}
	id, log = start()
	if b, err := os.ReadFile(f.paths.SessionDir(id).NetworkRepo()); err != nil || string(b) != "allow a.example\n" {
		t.Errorf("the trusted network file for the session: %q, %v", b, err)
	}
	if !strings.Contains(log, "copied 1 ignored files listed in .sandbarinclude/.worktreeinclude") || strings.Contains(log, "not trusted") {
		t.Errorf("the log of a session with trusted settings:\n%s", log)
	}

	// Changed: untrusted again, with the diff since the trusted version;
	// a decision on the hash shown before it changed is refused.
	old := r
	write(".sandbar/network", "allow a.example\nallow b.example:22\n")
	r = review()
	n := r.Proposal(workspace.SettingsNetwork)
	if n.State != TrustChanged || n.Diff != "--- .sandbar/network\n allow a.example\n+allow b.example:22\n" || r.NetworkRules() != nil {
		t.Errorf("changed: %s, diff\n%s", n.State, n.Diff)
	}
	if r.Proposal(workspace.SettingsInclude).State != TrustTrusted {
		t.Error("the include lists lost their trust when the network file changed")
	}
	if !strings.Contains(strings.Join(r.Notes(), "\n"), "This repository's .sandbar/network changed since you trusted it, so it was not used") {
		t.Errorf("notes: %q", r.Notes())
	}
	if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, hashes(old, workspace.SettingsNetwork)); !errors.Is(err, ErrTrustChanged) {
		t.Errorf("trusting the hash shown before the change: %v", err)
	}

	// Ignored: not used, not pending, the log still says so.
	if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustIgnored, hashes(r, workspace.SettingsNetwork)); err != nil {
		t.Fatal(err)
	}
	r = review()
	if r.Proposal(workspace.SettingsNetwork).State != TrustIgnored || len(r.Pending()) != 0 || r.NetworkRules() != nil {
		t.Errorf("ignored: %+v", r.Proposal(workspace.SettingsNetwork))
	}
	if !strings.Contains(strings.Join(r.Notes(), "\n"), "you chose to ignore this content") || len(r.Attention()) != 0 {
		t.Errorf("notes: %q; for the banner: %q", r.Notes(), r.Attention())
	}

	// Trusted, but wider than a repository may add: refused whole.
	write(".sandbar/network", "allow a.example\nallow 0.0.0.0/0:*\n")
	r = review()
	if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, hashes(r, workspace.SettingsNetwork)); err != nil {
		t.Fatal(err)
	}
	r = review()
	n = r.Proposal(workspace.SettingsNetwork)
	if n.State != TrustTrusted || !strings.Contains(n.Refused, "line 2: `allow 0.0.0.0/0:*`: a repository's network file may not use a `*` port") || r.NetworkRules() != nil {
		t.Errorf("trusted and too wide: %s, refused %q", n.State, n.Refused)
	}
	if a := r.Attention(); len(a) != 1 || !strings.Contains(a[0], "refused as a whole") {
		t.Errorf("for the banner: %q", a)
	}
	id, log = start()
	if !strings.Contains(log, "This repository's .sandbar/network is trusted but was refused as a whole, so it was not used: line 2: `allow 0.0.0.0/0:*`") {
		t.Errorf("the log of a session with a refused network file:\n%s", log)
	}
	if _, err := os.Stat(f.paths.SessionDir(id).NetworkRepo()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused network file was kept for the session: %v", err)
	}
}
