package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/env/prepared"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestChangedFileKeepsPreviousEnvironment: once a project's trusted
// devcontainer.json changes, new sessions do not wait for its new
// prepared environment: they start on the previous one, as it was made
// (its file's variables, kept for a restart), and say so in their log.
// Sessions started once the new one is ready boot on it. A failed
// rebuild keeps the previous one serving, with a warning saying why.
// The preparing machine is a stand-in (it needs a VM: see
// tests/prepared_linux_test.go), writing real environments to the real
// store as runPreparation does.
func TestChangedFileKeepsPreviousEnvironment(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	gate := make(chan error) // a preparation waits for its outcome here, when gated
	var gated bool
	f.m.prep.run = func(ctx context.Context, job prepJob, p *preparation) (prepared.Env, error) {
		st := f.m.preparedStore()
		b, err := st.Begin(envName(job.project.ID), job.key)
		if err != nil {
			return prepared.Env{}, err
		}
		meta := prepared.Env{BaseKey: job.baseKey, Commit: job.commit, Origin: job.origin()}
		if gated {
			select {
			case err := <-gate:
				if err != nil {
					e, _ := b.Fail(meta, err)
					return e, err
				}
			case <-ctx.Done():
				b.Abandon()
				return prepared.Env{}, ctx.Err()
			}
		}
		if err := os.WriteFile(b.Disk(), []byte("a prepared disk"), 0o600); err != nil {
			return prepared.Env{}, err
		}
		return b.Finish(meta)
	}
	setFile := func(which string) {
		t.Helper()
		p := filepath.Join(f.repo, ".devcontainer", "devcontainer.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(`{"containerEnv": {"WHICH": "`+which+`"}, "postCreateCommand": "echo made `+which+`"}`), 0o644)
		git(t, f.repo, "add", "-A")
		git(t, f.repo, "commit", "-qm", "environment "+which)
		r, err := f.m.RepoTrust(ctx, f.repo)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.m.DecideRepoTrust(ctx, f.repo, store.TrustTrusted, map[string]string{workspace.SettingsEnvironment: r.Proposal(workspace.SettingsEnvironment).Hash}); err != nil {
			t.Fatal(err)
		}
	}
	// start runs a session to its end and returns its log and the file
	// it keeps for a restart.
	start := func() (string, string) {
		t.Helper()
		id, log := f.runToEnd(t)
		rec, err := readEnvRecord(f.paths.SessionDir(id).Environment())
		if err != nil || rec == nil {
			t.Fatalf("the session's kept file: %v", err)
		}
		return log, string(rec.Data)
	}
	waitIdle := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for f.m.Preparing() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the background preparation did not end")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	const previous = "this session uses the previous one from "

	if _, _, err := f.m.AddProject(ctx, f.repo); err != nil {
		t.Fatal(err)
	}
	setFile("one")
	log, _ := start()
	if !strings.Contains(log, "environment: prepared in") || strings.Contains(log, previous) {
		t.Fatalf("the first session did not wait for its environment:\n%s", log)
	}

	// The file changes: the next session starts at once on the previous
	// environment, as it was made, while the new one is made.
	setFile("two")
	gated = true
	log, kept := start()
	for _, want := range []string{
		"environment: the environment is being rebuilt for the change in .devcontainer/devcontainer.json; " + previous,
		"environment: prepared environment ",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("a session after the change: its log lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(kept, "echo made one") {
		t.Errorf("the session on the previous environment keeps another file for its restarts: %s", kept)
	}
	if f.m.Preparing() != 1 {
		t.Errorf("the changed file's environment is not being made: %d preparations", f.m.Preparing())
	}
	gate <- nil
	waitIdle()

	// Ready: sessions switch to it.
	log, kept = start()
	if strings.Contains(log, previous) || !strings.Contains(kept, "echo made two") {
		t.Errorf("a session once the new environment is ready did not boot on it:\n%s\nkept: %s", log, kept)
	}

	// A failed rebuild keeps the last good one serving, saying why.
	setFile("three")
	log, _ = start() // starts the rebuild in the background
	if !strings.Contains(log, previous) {
		t.Errorf("a session after the third change:\n%s", log)
	}
	gate <- errors.New("the environment's setup failed: postCreateCommand exited 3 after 1s")
	waitIdle()
	log, kept = start()
	for _, want := range []string{"WARNING: preparing the environment for the changed file failed (the environment's setup failed: postCreateCommand exited 3", "could not be rebuilt", previous} {
		if !strings.Contains(log, want) {
			t.Errorf("a session after the failed rebuild: its log lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(kept, "echo made two") {
		t.Errorf("a session after the failed rebuild does not run on the last good file: %s", kept)
	}
}
