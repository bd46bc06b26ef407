package session

import (
	"reflect"
	"strings"
	"testing"

	"sandbar/app/env/devcontainer"
	"sandbar/app/workspace"
)

func parseDC(t *testing.T, text string) *devcontainer.Config {
	t.Helper()
	cfg, err := devcontainer.Parse(devcontainer.DefaultPath, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestEnvironmentEnv: containerEnv, then remoteEnv over it, with
// ${containerEnv:NAME} filled from the file and then the guest's
// defaults; a remoteEnv null removes.
func TestEnvironmentEnv(t *testing.T) {
	cfg := parseDC(t, `{
		"containerEnv": {"GOPATH": "/go", "PATH": "${containerEnv:PATH}:${containerEnv:GOPATH}/bin", "DROP": "x"},
		"remoteEnv": {"EDITOR": "vi", "DROP": null, "HOMEDIR": "${containerEnv:HOME}"},
	}`)
	got := environmentEnv(cfg, nil, nil)
	want := map[string]string{
		"GOPATH":  "/go",
		"PATH":    guestDefaults["PATH"] + ":/go/bin",
		"EDITOR":  "vi",
		"HOMEDIR": "/home/agent",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environmentEnv = %v, want %v", got, want)
	}
}

// TestEnvironmentSetup: a new session runs Sandbar's prepare steps as
// root, then onCreate, updateContent, postCreate (its parts in one
// stage) and postStart as the agent in /workspace; a restart runs the
// prepare steps and postStart only.
func TestEnvironmentSetup(t *testing.T) {
	cfg := parseDC(t, `{
		"workspaceFolder": "/workspaces/app",
		"mounts": [{"type": "volume", "source": "c", "target": "/cache"}, {"type": "tmpfs", "target": "/scratch"}],
		"onCreateCommand": "make deps",
		"updateContentCommand": ["npm", "ci"],
		"postCreateCommand": {"a": "echo a", "b": ["echo", "b"]},
		"postStartCommand": "npm start &",
	}`)
	env := map[string]string{"X": "1"}
	names := func(stages [][]SetupStep) (out []string) {
		for _, st := range stages {
			var s []string
			for _, step := range st {
				s = append(s, step.Name+"/"+step.User)
			}
			out = append(out, strings.Join(s, " + "))
		}
		return out
	}
	fresh := environmentSetup(cfg, env, false)
	want := []string{
		"mounts (volumes on the session's disk)/root + mounts (tmpfs)/root + workspaceFolder (/workspaces/app → /workspace)/root",
		"onCreateCommand/", "updateContentCommand/", "postCreateCommand (a)/ + postCreateCommand (b)/", "postStartCommand/",
	}
	if got := names(fresh); !reflect.DeepEqual(got, want) {
		t.Errorf("a new session's stages:\n%q\nwant\n%q", got, want)
	}
	if st := fresh[2][0]; !reflect.DeepEqual(st.Argv, []string{"npm", "ci"}) || st.Cwd != "/workspace" || st.Env["X"] != "1" {
		t.Errorf("updateContentCommand's step: %+v", st)
	}
	if st := fresh[1][0]; !reflect.DeepEqual(st.Argv, []string{"/bin/sh", "-c", "make deps"}) {
		t.Errorf("a string command runs in a shell: %q", st.Argv)
	}
	// The paths reach the root steps as arguments, never in the script.
	for _, st := range fresh[0] {
		if strings.Contains(st.Argv[2], "/cache") || strings.Contains(st.Argv[2], "/workspaces") {
			t.Errorf("a path in %s's script: %q", st.Name, st.Argv[2])
		}
	}
	if got := names(environmentSetup(cfg, env, true)); !reflect.DeepEqual(got, []string{want[0], "postStartCommand/"}) {
		t.Errorf("a restart's stages: %q", got)
	}
	if got := environmentSetup(parseDC(t, `{}`), env, false); len(got) != 0 {
		t.Errorf("an empty file has setup: %v", got)
	}
}

// TestRepoEnvironment: only a trusted file is used; one that does not
// parse is an error naming its line and column and --env default.
func TestRepoEnvironment(t *testing.T) {
	review := func(state, data string) RepoReview {
		return RepoReview{Proposals: []RepoProposal{{
			RepoSettings: workspace.RepoSettings{Kind: workspace.SettingsEnvironment,
				Files: []workspace.SettingsFile{{Path: ".devcontainer/devcontainer.json", Data: []byte(data)}}},
			State: state,
		}}}
	}
	for _, state := range []string{TrustUntrusted, TrustChanged, TrustIgnored} {
		if rec, cfg, err := repoEnvironment(review(state, `{"postStartCommand": "x"}`)); rec != nil || cfg != nil || err != nil {
			t.Errorf("%s content was used: %v %v %v", state, rec, cfg, err)
		}
	}
	rec, cfg, err := repoEnvironment(review(TrustTrusted, `{"postStartCommand": "x"}`))
	if err != nil || cfg == nil || rec.File != ".devcontainer/devcontainer.json" || cfg.PostStartCommand.Shell != "x" {
		t.Errorf("trusted content: %+v %+v %v", rec, cfg, err)
	}
	_, _, err = repoEnvironment(review(TrustTrusted, "{\n  \"postStartCommand\": 3\n}"))
	if err == nil || !strings.Contains(err.Error(), ".devcontainer/devcontainer.json:2:") || !strings.Contains(err.Error(), "--env default") {
		t.Errorf("a bad file: %v", err)
	}
}
