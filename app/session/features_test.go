package session

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/app/env/devcontainer"
	"sandbar/app/env/features"
)

// TestFeatureSet: each feature is a root stage after Sandbar's preparing
// steps and before the file's commands; its options and the spec's user
// variables reach install.sh; a feature's containerEnv reaches the
// installs after it (filled in against root's PATH) and the agent
// (against the agent's), and the file's containerEnv comes over it.
func TestFeatureSet(t *testing.T) {
	cfg, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{
		"mounts": [{"type": "volume", "source": "c", "target": "/cache"}],
		"containerEnv": {"B_HOME": "/file/b", "BOTH": "${containerEnv:A_HOME}+file"},
		"onCreateCommand": "true",
		"features": {"./a": {}, "./b": {}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id string, env ...devcontainer.EnvVar) features.Feature {
		return features.Feature{
			Feature: devcontainer.Feature{ID: id, Options: []devcontainer.Option{{Name: "the-version", Value: "1.2"}}},
			Meta:    features.Meta{ID: id, Version: "0.1.0", ContainerEnv: env},
			Source:  ".devcontainer/" + id,
			Files:   []features.File{{Name: "install.sh", Data: []byte("#!/bin/sh\n"), Mode: 0o755}},
		}
	}
	set, err := newFeatureSet([]features.Feature{
		mk("./a", devcontainer.EnvVar{Name: "PATH", Value: "/opt/a/bin:${PATH}"}, devcontainer.EnvVar{Name: "A_HOME", Value: "/opt/a"}),
		mk("./b", devcontainer.EnvVar{Name: "B_HOME", Value: "$A_HOME/b"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	fstages, notes := set.forRun(false)
	if len(notes) != 2 {
		t.Errorf("notes %q, want one per feature", notes)
	}
	if rs, rnotes := set.forRun(true); rs != nil || len(rnotes) != 1 || !strings.Contains(rnotes[0], "./a (0.1.0), ./b (0.1.0)") {
		t.Errorf("a restart: %d stages, notes %q, want none and one note naming both", len(rs), rnotes)
	}
	stages := withFeatures(environmentSetup(cfg, environmentEnv(cfg, set.Env, nil), false), cfg, fstages)
	var names []string
	for _, st := range stages {
		names = append(names, st[0].Name)
	}
	if got, want := strings.Join(names, "; "), "mounts (volumes on the session's disk); feature ./a (0.1.0); feature ./b (0.1.0); onCreateCommand"; got != want {
		t.Fatalf("stages %s, want %s", got, want)
	}
	a, b := stages[1][0], stages[2][0]
	if a.User != "root" || len(a.Stdin) == 0 || a.Done != "feature ./a (0.1.0) installed" {
		t.Errorf("./a's step: user %q, %d bytes of stdin, done %q", a.User, len(a.Stdin), a.Done)
	}
	for k, v := range map[string]string{"THE_VERSION": "1.2", "_REMOTE_USER": "agent", "_REMOTE_USER_HOME": "/home/agent", "_CONTAINER_USER": "agent", "PATH": rootPath} {
		if a.Env[k] != v {
			t.Errorf("./a's install env %s=%q, want %q", k, a.Env[k], v)
		}
	}
	if b.Env["PATH"] != "/opt/a/bin:"+rootPath || b.Env["A_HOME"] != "/opt/a" {
		t.Errorf("./b's install env has PATH %q, A_HOME %q: ./a's containerEnv did not reach it", b.Env["PATH"], b.Env["A_HOME"])
	}
	env := environmentEnv(cfg, set.Env, nil)
	for k, v := range map[string]string{"PATH": "/opt/a/bin:" + guestDefaults["PATH"], "A_HOME": "/opt/a", "B_HOME": "/file/b", "BOTH": "/opt/a+file"} {
		if env[k] != v {
			t.Errorf("the agent's %s=%q, want %q", k, env[k], v)
		}
	}
	// The session's record keeps the set, files included, for a restart.
	path := filepath.Join(t.TempDir(), "environment.json")
	if err := keepEnvironment(path, &envRecord{File: cfg.File, Data: []byte(`{"features": {"./a": {}}}`), Features: set}); err != nil {
		t.Fatal(err)
	}
	_, kept, err := keptEnvironment(path)
	if err != nil {
		t.Fatal(err)
	}
	if kept == nil || len(kept.Stages) != 2 || !bytes.Equal(kept.Stages[0][0].Stdin, a.Stdin) || len(kept.Env) != len(set.Env) || kept.Stages[1][0].Timeout != featureTimeout {
		t.Errorf("kept %+v, want the set written", kept)
	}
	// No features, no change.
	if got := withFeatures(stages[:1], cfg, nil); len(got) != 1 {
		t.Errorf("an empty set changed the stages: %d", len(got))
	}
}
