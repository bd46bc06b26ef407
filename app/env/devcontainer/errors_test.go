package devcontainer

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Each bad input is a file in testdata/bad, parsed as the repository's
// .devcontainer/devcontainer.json; want is every error's exact text.
func TestParseErrors(t *testing.T) {
	const file = ".devcontainer/devcontainer.json"
	tests := []struct {
		name string
		want []string
	}{
		{"bind-mount-object", []string{
			".devcontainer/devcontainer.json:3:14: mounts[0] is a bind mount of a host path — a session never sees the host's files; use a volume (type=volume) instead",
		}},
		{"bind-mount", []string{
			".devcontainer/devcontainer.json:4:5: mounts[0] is a bind mount of a host path — a session never sees the host's files; use a volume (type=volume) instead",
		}},
		{"build-no-dockerfile", []string{
			".devcontainer/devcontainer.json:2:12: build names no dockerfile — add \"dockerfile\": \"Dockerfile\" (a path from this file's folder), or use image instead",
		}},
		{"column-runes", []string{
			".devcontainer/devcontainer.json:1:30: image must be a string, not a number — write it like \"golang:1.23\"",
		}},
		{"command-number", []string{
			".devcontainer/devcontainer.json:3:24: postCreateCommand must be a string, an array of strings or an object of those, not a number — write it like \"npm ci\", [\"make\", \"test\"] or { \"deps\": \"go mod download\" }",
		}},
		{"comment-unclosed", []string{
			".devcontainer/devcontainer.json:1:21: malformed JSONC: parsing comment: unexpected EOF — fix the syntax here (comments and trailing commas are fine)",
		}},
		{"cpus-fraction", []string{
			".devcontainer/devcontainer.json:3:33: hostRequirements.cpus is 2.5, not a whole number — write it like 4",
		}},
		{"cpus-negative", []string{
			".devcontainer/devcontainer.json:3:33: hostRequirements.cpus is -2 — give a number of CPUs from 1 to 1024, like 4",
		}},
		{"deep", []string{
			".devcontainer/devcontainer.json:1:65: values are nested more than 64 deep — a devcontainer.json needs a few levels; flatten it",
		}},
		{"dockerfile-absolute", []string{
			".devcontainer/devcontainer.json:2:28: build.dockerfile \"/etc/passwd\" is a path on this machine — a session never sees the host's files; name a path inside the repository, from this file's folder",
		}},
		{"dockerfile-outside", []string{
			".devcontainer/devcontainer.json:2:28: build.dockerfile \"../../Dockerfile\" leads out of the repository — Sandbar builds only from files inside it; move what it needs into the repository",
		}},
		{"duplicate", []string{
			".devcontainer/devcontainer.json:4:3: \"image\" is given twice (first on line 2) — keep one",
		}},
		{"env-number", []string{
			".devcontainer/devcontainer.json:3:29: containerEnv.PORT must be a string, not a number — write it like \"value\"",
		}},
		{"feature-absolute", []string{
			".devcontainer/devcontainer.json:3:17: features[\"/opt/features/x\"] is a folder of this machine — a session never sees the host's files; put the feature in the repository and name it \"./folder\"",
		}},
		{"feature-number", []string{
			".devcontainer/devcontainer.json:4:59: features[\"ghcr.io/devcontainers/features/node:1\"].version is a number — feature options are strings or booleans; write it in quotes, like \"22\"",
		}},
		{"image-and-build", []string{
			".devcontainer/devcontainer.json:3:12: both image and a Dockerfile build are given — keep one, so it is clear what the session runs",
		}},
		{"image-number", []string{
			".devcontainer/devcontainer.json:1:12: image must be a string, not a number — write it like \"golang:1.23\"",
		}},
		{"invalid-utf8", []string{
			".devcontainer/devcontainer.json:1:15: the file is not UTF-8 text here — save it as UTF-8",
		}},
		{"memory-words", []string{
			".devcontainer/devcontainer.json:3:35: hostRequirements.memory \"lots\" is not a size — write it like \"8gb\", \"512mb\" or \"8GiB\"",
		}},
		{"missing-comma", []string{
			".devcontainer/devcontainer.json:3:3: malformed JSONC: invalid character '\"' after object value (expecting ',' or '}') — fix the syntax here (comments and trailing commas are fine)",
		}},
		{"mount-etc", []string{
			".devcontainer/devcontainer.json:3:14: mounts[0] would cover \"/etc\", which the session needs — mount on a folder of its own, like \"/home/vscode/.cache\"",
		}},
		{"multi", []string{
			".devcontainer/devcontainer.json:2:11: image \"débian ünstable\" is not an image name — write one like \"golang:1.23\" or \"mcr.microsoft.com/devcontainers/go:1\"",
			".devcontainer/devcontainer.json:3:19: forwardPorts[0] is 0 — a port is 1 to 65535",
			".devcontainer/devcontainer.json:4:32: hostRequirements.cpus is 0 — give a number of CPUs from 1 to 1024, like 4",
		}},
		{"name-control", []string{
			".devcontainer/devcontainer.json:1:11: name \"web\\x1b]0;pwned\\a\" has control characters or is over 200 bytes — give a short plain name",
		}},
		{"not-object", []string{
			".devcontainer/devcontainer.json:1:1: the file must be an object, not an array — write it like { \"image\": \"golang:1.23\" }",
		}},
		{"override-unknown", []string{
			".devcontainer/devcontainer.json:4:35: overrideFeatureInstallOrder[0] \"ghcr.io/devcontainers/features/node\" names no feature in features — remove it or add the feature",
		}},
		{"port-range", []string{
			".devcontainer/devcontainer.json:3:26: forwardPorts[1] is 70000 — a port is 1 to 65535",
		}},
		{"port-string", []string{
			".devcontainer/devcontainer.json:3:20: forwardPorts[0] \"db:postgres\" has no port 1 to 65535 — write it like 3000 or \"db:5432\"",
		}},
		{"trailing-garbage", []string{
			".devcontainer/devcontainer.json:1:23: malformed JSONC: invalid character 'x' after top-level value — fix the syntax here (comments and trailing commas are fine)",
		}},
		{"unclosed", []string{
			".devcontainer/devcontainer.json:4:1: malformed JSONC: parsing value: unexpected EOF — fix the syntax here (comments and trailing commas are fine)",
		}},
		{"user-space", []string{
			".devcontainer/devcontainer.json:3:17: remoteUser \"root; rm -rf /\" is not a user name — write a name like \"vscode\" or a uid like \"1000\"",
		}},
		{"volume-path", []string{
			".devcontainer/devcontainer.json:3:14: mounts[0] gives the volume the source \"/var/lib/data\", a path — a session never sees the host's files; name the volume instead, like \"source=cache\"",
		}},
		{"workspace-proc", []string{
			".devcontainer/devcontainer.json:3:22: workspaceFolder \"/proc/self\" would replace a folder the system needs — choose a folder of its own, like \"/workspaces/project\" (the repository stays at /workspace)",
		}},
		{"workspace-relative", []string{
			".devcontainer/devcontainer.json:3:22: workspaceFolder \"src/app\" is not an absolute path — write one like \"/workspaces/project\"",
		}},
		{"workspace-root", []string{
			".devcontainer/devcontainer.json:3:22: workspaceFolder \"/\" would replace a folder the system needs — choose a folder of its own, like \"/workspaces/project\" (the repository stays at /workspace)",
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.name+".jsonc"] = true
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "bad", tt.name+".jsonc"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(file, data)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", cfg)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse error:\n got %q\nwant %q", got, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is no *Error", err)
			}
			if e.File != file || e.Error() != tt.want[0] {
				t.Errorf("first *Error is %+v, want the text %q", e, tt.want[0])
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.jsonc"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case in the table", f)
		}
	}
}
