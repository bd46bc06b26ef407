package features

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"sandbar/app/env/devcontainer"
	"sandbar/tests/registrytest"
)

// toolFeature is a feature whose install.sh writes a tool to
// /usr/local/bin that prints its GREETING option.
func toolFeature() map[string]string {
	return map[string]string{
		"devcontainer-feature.json": `{"id":"tool","version":"1.0.0","options":{"greeting":{"type":"string","default":"hello"}},"containerEnv":{"TOOL":"on"}}`,
		"install.sh":                "#!/bin/sh\nset -e\nprintf '#!/bin/sh\\necho %s\\n' \"$GREETING\" > /usr/local/bin/tool\nchmod +x /usr/local/bin/tool\n",
	}
}

// TestFetchRegistry pushes a feature artifact to a real docker-registry
// on loopback and fetches it, with what it depends on, as a session would.
func TestFetchRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry")
	}
	reg := registrytest.Start(t, "", "")
	registrytest.DockerConfig(t, reg.Host, "", "")
	base := reg.PushFeature(t, "features/base:1", map[string]string{
		"devcontainer-feature.json": `{"id":"base","version":"0.1.0","options":{"level":{"type":"string","default":"1"}}}`,
		"install.sh":                "#!/bin/sh\n",
	})
	files := toolFeature()
	files["devcontainer-feature.json"] = strings.Replace(files["devcontainer-feature.json"], `"containerEnv"`, `"dependsOn":{"`+base+`":{"level":"2"}},"containerEnv"`, 1)
	tool := reg.PushFeature(t, "features/tool:1", files)

	cfg, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{"image":"x","features":{"`+tool+`":{"greeting":"howdy"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Fetch(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != base || got[1].ID != tool {
		t.Fatalf("order %v, want %s (dependsOn) then %s", ids(got), base, tool)
	}
	if got[0].RequiredBy != tool || got[0].OptionEnv()["LEVEL"] != "2" {
		t.Errorf("base: required by %q, env %v", got[0].RequiredBy, got[0].OptionEnv())
	}
	f := got[1]
	if f.OptionEnv()["GREETING"] != "howdy" || f.Version() != "1.0.0" || !strings.HasPrefix(f.Digest, "sha256:") || f.Source != "registry "+reg.Host {
		t.Errorf("tool: env %v version %s digest %s source %s", f.OptionEnv(), f.Version(), f.Digest, f.Source)
	}
	var install []byte
	for _, file := range f.Files {
		if file.Name == InstallScript {
			install = file.Data
			if file.Mode&0o100 == 0 {
				t.Errorf("install.sh mode %o, want executable", file.Mode)
			}
		}
	}
	if !bytes.Equal(install, []byte(files["install.sh"])) {
		t.Errorf("install.sh is %q", install)
	}
	if len(f.Meta.ContainerEnv) != 1 || f.Meta.ContainerEnv[0].Value != "on" {
		t.Errorf("containerEnv %+v", f.Meta.ContainerEnv)
	}

	// What goes wrong says which feature, which registry and what to do.
	big := reg.PushFeatureLayer(t, "features/big:1", bytes.Repeat([]byte{'x'}, 5<<20))
	for _, bad := range []struct{ id, want string }{
		{reg.Host + "/features/none:1", "has no such feature: check its id and version tag"},
		{big, "larger than 4 MiB"},
		{registrytest.FreeAddr(t) + "/features/tool:1", "cannot reach registry"},
	} {
		cfg, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{"image":"x","features":{"`+bad.id+`":{}}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Fetch(context.Background(), cfg, Options{})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), bad.id) {
			t.Errorf("%s: %v, want %q", bad.id, err, bad.want)
		}
	}
}

func ids(fs []Feature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}
