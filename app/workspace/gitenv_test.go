package workspace

import (
	"os/exec"
	"strings"
	"testing"
)

// TestGitEnvScrubs: a git command here gets none of the variables that
// would point it at another repository, run a program of someone else's
// choosing (an external diff, a pager, an editor), trace it to a file, or
// change the language of what it prints; and it gets the fixed locale.
// It runs git itself with that environment, so what git sees is checked.
func TestGitEnvScrubs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	bad := map[string]string{
		"GIT_DIR": "/tmp/elsewhere", "GIT_WORK_TREE": "/tmp/elsewhere", "GIT_INDEX_FILE": "/tmp/index",
		"GIT_OBJECT_DIRECTORY": "/tmp/objects", "GIT_CONFIG_PARAMETERS": "'core.pager=evil'",
		"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "evil",
		"GIT_EXTERNAL_DIFF": "/tmp/evil-diff", "GIT_DIFF_OPTS": "-u9", "GIT_PAGER": "evil", "GIT_EDITOR": "evil",
		"GIT_TRACE": "/tmp/trace", "GIT_TRACE2": "/tmp/trace2", "GIT_TRACE_PACKET": "1", "GIT_TRACE2_EVENT": "/tmp/ev",
		"LC_ALL": "de_DE.UTF-8", "LANG": "de_DE.UTF-8", "LANGUAGE": "de",
	}
	for k, v := range bad {
		t.Setenv(k, v)
	}
	cmd := exec.Command("git", "-c", "alias.env=!env", "env")
	cmd.Dir = t.TempDir()
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git env: %v", err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			got[k] = v
		}
	}
	for k, v := range bad {
		if g, ok := got[k]; ok && g == v {
			t.Errorf("git got %s=%s from the caller's environment", k, g)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "GIT_TRACE") || strings.HasPrefix(k, "GIT_CONFIG_KEY_") {
			t.Errorf("git got %s", k)
		}
	}
	if got["LC_ALL"] != "C" || got["GIT_TERMINAL_PROMPT"] != "0" || got["GIT_OPTIONAL_LOCKS"] != "0" {
		t.Errorf("git got LC_ALL=%q GIT_TERMINAL_PROMPT=%q GIT_OPTIONAL_LOCKS=%q, want C, 0, 0", got["LC_ALL"], got["GIT_TERMINAL_PROMPT"], got["GIT_OPTIONAL_LOCKS"])
	}
}
