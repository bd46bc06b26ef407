package devcontainer

import (
	"regexp"
	"testing"
)

const keyBase = `{
	"image": "golang:1.23",
	"features": {
		"ghcr.io/devcontainers/features/node:1": { "version": "22", "nodeGypDependencies": true },
		"ghcr.io/devcontainers/features/common-utils:2": {},
	},
	"containerEnv": { "A": "1", "B": "2" },
	"remoteEnv": { "PATH": "${containerEnv:PATH}:/x" },
	"onCreateCommand": "go mod download",
	"updateContentCommand": ["go", "mod", "download"],
	"postCreateCommand": { "tools": "make tools", "build": ["go", "build", "./..."] },
	"postStartCommand": "echo hi",
	"remoteUser": "vscode",
	"forwardPorts": [8080],
}`

// The same file with its keys reordered, other whitespace and comments.
const keyShuffled = `// the same environment, written another way
{"remoteUser":"vscode","forwardPorts":[8080,],
  "postCreateCommand": {
    "build": ["go", "build", "./..."], /* parts run together */
    "tools": "make tools"
  },
  "updateContentCommand": [ "go", "mod", "download" ],
  "onCreateCommand": "go mod download",
  "remoteEnv": {"PATH": "${containerEnv:PATH}:/x"},
  "containerEnv": {"B": "2", "A": "1"},
  "features": {
    "ghcr.io/devcontainers/features/common-utils:2": {},
    "ghcr.io/devcontainers/features/node:1": {"nodeGypDependencies": true, "version": "22"}
  },
  "postStartCommand": "echo hi",
  "image": "golang:1.23"
}`

const (
	digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	commit = "0123456789abcdef0123456789abcdef01234567"
)

func keyOf(t *testing.T, text, digest, commit string) string {
	t.Helper()
	return Key(parseOne(t, text).KeyInput(digest, commit))
}

func TestKeyStable(t *testing.T) {
	a := keyOf(t, keyBase, digest, commit)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(a) {
		t.Fatalf("Key = %q, want 64 hex digits", a)
	}
	if b := keyOf(t, keyShuffled, digest, commit); a != b {
		t.Errorf("reordered keys, whitespace and comments changed the key: %s != %s", a, b)
	}
	if b := keyOf(t, keyBase, digest, commit); a != b {
		t.Errorf("the same input gave two keys: %s != %s", a, b)
	}
}

func TestKeyInputs(t *testing.T) {
	base := keyOf(t, keyBase, digest, commit)
	changed := map[string]string{
		"image digest":                  keyOf(t, keyBase, "sha256:2222222222222222222222222222222222222222222222222222222222222222", commit),
		"commit":                        keyOf(t, keyBase, digest, "1123456789abcdef0123456789abcdef01234567"),
		"feature option":                keyOf(t, replace(t, keyBase, `"version": "22"`, `"version": "20"`), digest, commit),
		"bool option as string":         keyOf(t, replace(t, keyBase, `"nodeGypDependencies": true`, `"nodeGypDependencies": "true"`), digest, commit),
		"feature version":               keyOf(t, replace(t, keyBase, "common-utils:2", "common-utils:1"), digest, commit),
		"feature removed":               keyOf(t, replace(t, keyBase, `"ghcr.io/devcontainers/features/common-utils:2": {},`, ``), digest, commit),
		"onCreateCommand":               keyOf(t, replace(t, keyBase, `"go mod download",`, `"go mod download -x",`), digest, commit),
		"updateContentCommand":          keyOf(t, replace(t, keyBase, `["go", "mod", "download"]`, `["go", "mod", "tidy"]`), digest, commit),
		"postCreateCommand":             keyOf(t, replace(t, keyBase, `"make tools"`, `"make tools2"`), digest, commit),
		"postCreateCommand part name":   keyOf(t, replace(t, keyBase, `"tools": "make tools"`, `"tool": "make tools"`), digest, commit),
		"string vs array command":       keyOf(t, replace(t, keyBase, `"onCreateCommand": "go mod download"`, `"onCreateCommand": ["go mod download"]`), digest, commit),
		"command moved to another hook": keyOf(t, replace(t, keyBase, `"onCreateCommand": "go mod download",`, `"onCreateCommand": "true", "postAttachCommand": "go mod download",`), digest, commit),
		"containerEnv":                  keyOf(t, replace(t, keyBase, `"B": "2"`, `"B": "3"`), digest, commit),
		"remoteEnv":                     keyOf(t, replace(t, keyBase, `:/x"`, `:/y"`), digest, commit),
		"remoteUser":                    keyOf(t, replace(t, keyBase, `"vscode"`, `"root"`), digest, commit),
		"containerUser":                 keyOf(t, replace(t, keyBase, `"remoteUser"`, `"containerUser"`), digest, commit),
		"workspaceFolder":               keyOf(t, replace(t, keyBase, `"image"`, `"workspaceFolder": "/src", "image"`), digest, commit),
	}
	seen := map[string]string{base: "base"}
	for name, k := range changed {
		if other, dup := seen[k]; dup {
			t.Errorf("changing the %s gives the key of %s", name, other)
		}
		seen[k] = name
	}
	// What only shapes a session leaves the key as it is.
	for name, text := range map[string]string{
		"postStartCommand": replace(t, keyBase, `"echo hi"`, `"echo bye"`),
		"forwardPorts":     replace(t, keyBase, `[8080]`, `[8081]`),
		"hostRequirements": replace(t, keyBase, `"image"`, `"hostRequirements": {"cpus": 8}, "image"`),
		"name":             replace(t, keyBase, `"image"`, `"name": "other", "image"`),
	} {
		if k := keyOf(t, text, digest, commit); k != base {
			t.Errorf("changing %s changed the key", name)
		}
	}
}

// Two strings that concatenate alike are still two inputs.
func TestKeyUnambiguous(t *testing.T) {
	a := Key(KeyInput{ImageDigest: "ab", Commit: "c"})
	b := Key(KeyInput{ImageDigest: "a", Commit: "bc"})
	c := Key(KeyInput{OnCreate: Command{Argv: []string{"a b"}}})
	d := Key(KeyInput{OnCreate: Command{Argv: []string{"a", "b"}}})
	if a == b || c == d {
		t.Errorf("ambiguous encoding: %v %v", a == b, c == d)
	}
}

func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !regexp.MustCompile(regexp.QuoteMeta(old)).MatchString(s) {
		t.Fatalf("%q is not in the text", old)
	}
	return regexp.MustCompile(regexp.QuoteMeta(old)).ReplaceAllLiteralString(s, new)
}
