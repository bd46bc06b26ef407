package devcontainer

import (
	"reflect"
	"testing"
)

func TestCommandRuns(t *testing.T) {
	c := parseOne(t, `{
		"onCreateCommand": "npm ci && npm run build",
		"updateContentCommand": ["npm", "ci", "--prefer-offline"],
		"postCreateCommand": {
			"server": "npm run dev",
			"db": ["createdb", "app"],
			"nothing": "",
		},
	}`)
	tests := []struct {
		name string
		c    Command
		want []Run
	}{
		{"string", c.OnCreateCommand, []Run{{Argv: []string{"/bin/sh", "-c", "npm ci && npm run build"}}}},
		{"array", c.UpdateContentCommand, []Run{{Argv: []string{"npm", "ci", "--prefer-offline"}}}},
		{"object", c.PostCreateCommand, []Run{
			{Name: "server", Argv: []string{"/bin/sh", "-c", "npm run dev"}},
			{Name: "db", Argv: []string{"createdb", "app"}},
		}},
		{"none", c.PostStartCommand, nil},
	}
	for _, tt := range tests {
		if got := tt.c.Runs(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Runs = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Runs gives copies: a caller appending to one does not change the file's.
	runs := c.UpdateContentCommand.Runs()
	runs[0].Argv[0] = "changed"
	if c.UpdateContentCommand.Argv[0] != "npm" {
		t.Errorf("Runs shares its argv with the Command")
	}
}

func TestExpandContainerEnv(t *testing.T) {
	env := map[string]string{"PATH": "/usr/bin:/bin", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for in, want := range map[string]string{
		"${containerEnv:PATH}:/home/vscode/go/bin":   "/usr/bin:/bin:/home/vscode/go/bin",
		"${containerEnv:MISSING}":                    "",
		"${containerEnv:MISSING:/opt}":               "/opt",
		"${containerEnv:EMPTY:/opt}":                 "",
		"a${containerEnv:PATH}b${containerEnv:PATH}": "a/usr/bin:/binb/usr/bin:/bin",
		"${containerEnv:PATH":                        "${containerEnv:PATH",
		"plain":                                      "plain",
	} {
		if got := ExpandContainerEnv(in, lookup); got != want {
			t.Errorf("ExpandContainerEnv(%q) = %q, want %q", in, got, want)
		}
	}
}

// ${localEnv:...} never reads this machine's environment.
func TestLocalEnvNeverRead(t *testing.T) {
	t.Setenv("SANDBAR_TEST_SECRET", "hunter2")
	c := parseOne(t, `{
		"containerEnv": { "A": "${localEnv:SANDBAR_TEST_SECRET}", "B": "${env:SANDBAR_TEST_SECRET}" },
		"postCreateCommand": "echo ${localEnv:SANDBAR_TEST_SECRET:fallback}",
	}`)
	if c.ContainerEnv[0].Value != "" || c.ContainerEnv[1].Value != "" || c.PostCreateCommand.Shell != "echo fallback" {
		t.Errorf("localEnv expanded to %q, %q, %q", c.ContainerEnv[0].Value, c.ContainerEnv[1].Value, c.PostCreateCommand.Shell)
	}
	if len(c.Notes) != 3 {
		t.Errorf("notes %q; want one per use", c.Notes)
	}
}
