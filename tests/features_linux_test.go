package tests

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbar/tests/registrytest"
)

// TestDevcontainerFeatures: a trusted devcontainer.json names a feature
// from a registry on loopback (an OCI artifact the test pushes, whose
// install.sh writes a tool using its option) and a local ./feature from
// the repository's .devcontainer folder. The session fetches both on the
// host, installs them as root in its VM before the lifecycle commands,
// so postCreateCommand can call the tools; the features' containerEnv
// reaches the agent; a restart installs nothing again. A feature the
// registry does not have fails the start with words.
func TestDevcontainerFeatures(t *testing.T) {
	reg := registrytest.Start(t, "", "")
	registrytest.DockerConfig(t, reg.Host, "", "")
	tool := reg.PushFeature(t, "features/tool:1", map[string]string{
		"devcontainer-feature.json": `{"id": "tool", "version": "1.4.2",
			"options": {"greeting": {"type": "string", "default": "hello", "proposals": ["hello", "howdy"]}},
			"containerEnv": {"TOOL_HOME": "/opt/tool", "PATH": "/opt/tool/bin:${PATH}"}}`,
		"install.sh": `#!/bin/sh
set -e
[ "$(id -u)" = 0 ] || { echo "not root" >&2; exit 1; }
mkdir -p /opt/tool/bin /usr/local/bin
printf '#!/bin/sh\necho "%s from tool for %s"\n' "$GREETING" "$_REMOTE_USER" > /usr/local/bin/greet
chmod 755 /usr/local/bin/greet
echo "#!/bin/sh" > /opt/tool/bin/toolpath && echo "echo on-path" >> /opt/tool/bin/toolpath && chmod 755 /opt/tool/bin/toolpath
echo "tool installed with greeting $GREETING"
`,
	})

	w := newWorld(t)
	dc := filepath.Join(w.repo, ".devcontainer")
	os.MkdirAll(filepath.Join(dc, "local-tool"), 0o755)
	devcontainer := `{
	"features": {
		"` + tool + `": {"greeting": "howdy"},
		"./local-tool": {}
	},
	"postCreateCommand": "greet > $HOME/post-create && local-tool >> $HOME/post-create && echo \"$TOOL_HOME\" >> $HOME/post-create",
}`
	files := map[string]string{
		"devcontainer.json": devcontainer,
		"local-tool/devcontainer-feature.json": `{"id": "local-tool", "version": "0.1.0",
			"options": {"word": {"type": "string", "default": "local"}}, "installsAfter": ["` + strings.TrimSuffix(tool, ":1") + `"]}`,
		// Past what an exec carries inline: the folder is streamed.
		"local-tool/data.txt":   bigText(600 << 10),
		"local-tool/install.sh": "#!/bin/sh\nset -e\ncommand -v greet\n[ \"$(sha256sum < data.txt | cut -c1-64)\" = " + sha256hex(bigText(600<<10)) + " ]\nprintf '#!/bin/sh\\necho %s-$(greet)\\n' \"$WORD\" > /usr/local/bin/local-tool\nchmod 755 /usr/local/bin/local-tool\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.git("add", ".")
	w.git("commit", "-qm", "devcontainer with features")
	w.ok("project", "add", w.repo)
	w.ok("project", "trust", "--yes", w.repo)

	id := w.startID("--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	w.waitLog(id, "agent started", 1)
	sh := func(script string) string {
		t.Helper()
		out, errOut, code := w.guestSh(id, script)
		if code != 0 {
			_, log, _ := w.run("", "logs", id)
			t.Fatalf("%s: exit %d: %s %s\nlog:\n%s", script, code, out, errOut, clip(log))
		}
		return out
	}
	if got, want := sh("cat $HOME/post-create"), "howdy from tool for agent\nlocal-howdy from tool for agent\n/opt/tool\n"; got != want {
		t.Errorf("postCreateCommand wrote %q, want %q (the tools with their options, before it ran)", got, want)
	}
	if got := sh(`toolpath; echo "$TOOL_HOME"; ls /tmp | grep -c sandbar-feature || true`); got != "on-path\n/opt/tool\n0\n" {
		t.Errorf("the agent's environment from the features, and the install folders left: %q", got)
	}
	// The session's log names the features; they were installed, before
	// postCreateCommand ran, in the prepared environment it boots on.
	_, log, _ := w.run("", "logs", id)
	for _, want := range []string{
		"environment: feature " + tool + " (1.4.2) from registry " + reg.Host + " sha256:",
		"options greeting=howdy",
		"environment: prepared environment",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, clip(log))
		}
	}
	envLog := w.ok("env", "logs", w.repo)
	for _, want := range []string{
		"tool installed with greeting howdy",
		"feature " + tool + " (1.4.2) installed in ",
		"feature ./local-tool (0.1.0) installed in ",
	} {
		if !strings.Contains(envLog, want) {
			t.Errorf("the preparation's log lacks %q:\n%s", want, clip(envLog))
		}
	}
	if i, j := strings.Index(envLog, "feature ./local-tool (0.1.0) installed"), strings.Index(envLog, "$ postCreateCommand"); i < 0 || j < 0 || i > j {
		t.Errorf("the features were not installed before postCreateCommand ran:\n%s", clip(envLog))
	}

	// A restart boots on the same environment: nothing installed again,
	// the features' environment still the agent's.
	w.ok("stop", id)
	w.ok("restart", id)
	w.waitLog(id, "agent started", 2)
	_, log, _ = w.run("", "logs", id)
	if n := strings.Count(log, "(1.4.2) installed in "); n != 0 {
		t.Errorf("the feature was installed %d times in the session, want none (it is in the prepared environment):\n%s", n, clip(log))
	}
	if got := sh(`echo "$TOOL_HOME"; greet`); got != "/opt/tool\nhowdy from tool for agent\n" {
		t.Errorf("after a restart: %q", got)
	}
	w.ok("rm", "--force", id)

	// A feature the registry does not have: the start fails at once,
	// naming it, the registry and what to do; no session is made.
	missing := reg.Host + "/features/missing:1"
	os.WriteFile(filepath.Join(dc, "devcontainer.json"), []byte(`{"features": {"`+missing+`": {}}}`), 0o644)
	w.git("commit", "-qam", "a missing feature")
	w.ok("project", "trust", "--yes", w.repo)
	_, errOut, code := w.run("", "start", "--repo", w.repo, "--agent", "sleep 3600", "--memory", "1024", "--disk", "1")
	if code == 0 || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "has no such feature: check its id and version tag") {
		t.Errorf("a start with a missing feature: exit %d: %s", code, errOut)
	}
}

// bigText is n bytes of text that gzip cannot shrink much, the same
// every run.
func bigText(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n*3/4+3)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
