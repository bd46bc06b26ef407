package features

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"

	"sandbar/app/env/devcontainer"
)

const toolMeta = `{
	// comments, as the reference tools accept
	"id": "tool", "version": "1.2.3", "name": "A tool",
	"options": {
		"greeting": {"type": "string", "default": "hello", "proposals": ["hello", "hi"]},
		"loud": {"type": "boolean", "default": false},
		"flavour": {"type": "string", "enum": ["plain", "spicy"], "default": "plain"}
	},
	"containerEnv": {"TOOL_HOME": "/opt/tool", "PATH": "/opt/tool/bin:${PATH}"},
	"installsAfter": ["ghcr.io/x/base"],
	"privileged": true, "postCreateCommand": "true", "description": "d"
}`

func TestParseMeta(t *testing.T) {
	m, err := ParseMeta("./tool", []byte(toolMeta))
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tool" || m.Version != "1.2.3" || len(m.Options) != 3 {
		t.Fatalf("meta %+v", m)
	}
	if o := m.Options["loud"]; o.Type != "boolean" || o.Default != "false" {
		t.Errorf("loud %+v", o)
	}
	if o := m.Options["greeting"]; o.Default != "hello" || len(o.Proposals) != 2 {
		t.Errorf("greeting %+v", o)
	}
	if len(m.ContainerEnv) != 2 || m.ContainerEnv[0].Name != "PATH" || m.ContainerEnv[1].Name != "TOOL_HOME" {
		t.Errorf("containerEnv %+v, want PATH then TOOL_HOME", m.ContainerEnv)
	}
	if strings.Join(m.Unsupported, ",") != "postCreateCommand,privileged" {
		t.Errorf("unsupported %v, want postCreateCommand and privileged named", m.Unsupported)
	}
	if len(m.InstallsAfter) != 1 {
		t.Errorf("installsAfter %v", m.InstallsAfter)
	}

	dep, err := ParseMeta("x", []byte(`{"id":"x","dependsOn":{"ghcr.io/a/b:1":{"v":"2","on":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(dep.DependsOn) != 1 || dep.DependsOn[0].ID != "ghcr.io/a/b:1" || len(dep.DependsOn[0].Options) != 2 ||
		dep.DependsOn[0].Options[0] != (devcontainer.Option{Name: "on", Value: "true", Bool: true}) {
		t.Errorf("dependsOn %+v", dep.DependsOn)
	}

	for _, bad := range []struct{ json, want string }{
		{`{`, "is not valid JSON"},
		{`{"version":"1"}`, "has no id"},
		{`{"id":"x","options":{"n":{"type":"number"}}}`, `type "number"`},
		{`{"id":"x","options":{"b":{"type":"boolean","default":"yes"}}}`, "not true or false"},
		{`{"id":"x","dependsOn":{"./local":{}}}`, "must be a feature in a registry"},
	} {
		_, err := ParseMeta("x", []byte(bad.json))
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "devcontainer-feature.json") {
			t.Errorf("%s: %v, want an error with %q", bad.json, err, bad.want)
		}
	}
}

func TestResolveOptions(t *testing.T) {
	m, err := ParseMeta("tool", []byte(toolMeta))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.ResolveOptions("./tool", []devcontainer.Option{{Name: "greeting", Value: "howdy"}, {Name: "loud", Value: "true", Bool: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := []devcontainer.Option{{Name: "flavour", Value: "plain"}, {Name: "greeting", Value: "howdy"}, {Name: "loud", Value: "true", Bool: true}}
	if len(got) != len(want) {
		t.Fatalf("options %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("option %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []struct {
		opt  devcontainer.Option
		want string
	}{
		{devcontainer.Option{Name: "colour", Value: "red"}, `has no option "colour" (its options are flavour, greeting, loud)`},
		{devcontainer.Option{Name: "loud", Value: "very"}, "write true or false"},
		{devcontainer.Option{Name: "flavour", Value: "sweet"}, "not one of plain, spicy"},
	} {
		_, err := m.ResolveOptions("./tool", []devcontainer.Option{bad.opt})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "./tool") {
			t.Errorf("%+v: %v, want %q", bad.opt, err, bad.want)
		}
	}
}

// tarOf makes a tar of headers, each with body for a regular file.
func tarOf(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := strings.Repeat("x", int(h.Size))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	return buf.Bytes()
}

func TestReadArchive(t *testing.T) {
	good := tarOf(t,
		tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "./install.sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: 10},
		tar.Header{Name: "./lib/", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "./lib/a.sh", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
		tar.Header{Name: "./lib/b.sh", Typeflag: tar.TypeSymlink, Linkname: "a.sh"},
		tar.Header{Name: "./c.sh", Typeflag: tar.TypeLink, Linkname: "./lib/a.sh"},
	)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	for name, data := range map[string][]byte{"tar": good, "tar.gz": gz.Bytes()} {
		files, err := readArchive("f", bytes.NewReader(data), 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(files) != 5 || files[0].Name != "install.sh" || files[0].Mode != 0o755 || files[3].Link != "a.sh" || string(files[4].Data) != "xxx" {
			t.Errorf("%s: files %+v", name, files)
		}
		if _, err := Archive(files); err != nil {
			t.Errorf("%s: archive: %v", name, err)
		}
	}
	for _, bad := range []struct {
		name string
		data []byte
		max  int64
		want string
	}{
		{"link out", tarOf(t, tar.Header{Name: "lib/x", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}), 1 << 20, "outside the feature's folder"},
		{"absolute link", tarOf(t, tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), 1 << 20, "outside the feature's folder"},
		{"path out", tarOf(t, tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1}), 1 << 20, "leaves the feature's folder"},
		{"hard link out", tarOf(t, tar.Header{Name: "x", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}), 1 << 20, "outside the feature's folder"},
		{"device", tarOf(t, tar.Header{Name: "x", Typeflag: tar.TypeChar}), 1 << 20, "neither a file"},
		{"too large", tarOf(t, tar.Header{Name: "x", Typeflag: tar.TypeReg, Size: 5000}), 4096, "larger than"},
		{"archive past the bound", tarOf(t, tar.Header{Name: "x", Typeflag: tar.TypeReg, Size: 3500}), 4096, "larger than"},
	} {
		_, err := readArchive("f", bytes.NewReader(bad.data), bad.max)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.name, err, bad.want)
		}
	}
}

// TestFetchLocal: "./folder" features come from the trusted files given,
// ordered by installsAfter, their options resolved.
func TestFetchLocal(t *testing.T) {
	local := map[string][]byte{
		".devcontainer/devcontainer.json":           nil,
		".devcontainer/b/devcontainer-feature.json": []byte(`{"id":"b","version":"2.0.0","installsAfter":["./a"],"options":{"v":{"type":"string","default":"1"}}}`),
		".devcontainer/b/install.sh":                []byte("#!/bin/sh\necho b $V\n"),
		".devcontainer/a/devcontainer-feature.json": []byte(`{"id":"a"}`),
		".devcontainer/a/install.sh":                []byte("#!/bin/sh\necho a\n"),
		".devcontainer/a/lib/x.sh":                  []byte("x"),
		".devcontainer/nometa/install.sh":           []byte("#!/bin/sh\n"),
	}
	cfg, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(`{"image":"x","features":{"./b":{"v":"9"},"./a":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Fetch(context.Background(), cfg, Options{Local: local, LocalFrom: ".devcontainer"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "./a" || got[1].ID != "./b" {
		t.Fatalf("order %+v, want ./a then ./b", got)
	}
	if env := got[1].OptionEnv(); env["V"] != "9" || got[1].Version() != "2.0.0" || got[1].Source != ".devcontainer/b" {
		t.Errorf("./b: env %v version %s source %s", env, got[1].Version(), got[1].Source)
	}
	var names []string
	for _, f := range got[0].Files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "lib,devcontainer-feature.json,install.sh,lib/x.sh" {
		t.Errorf("./a files %v", names)
	}

	for _, bad := range []struct{ json, want string }{
		{`{"image":"x","features":{"./missing":{}}}`, "has no files of .devcontainer/missing"},
		{`{"image":"x","features":{"./nometa":{}}}`, "has no devcontainer-feature.json"},
		{`{"image":"x","features":{"./b":{"nope":"1"}}}`, `has no option "nope"`},
	} {
		cfg, err := devcontainer.Parse(".devcontainer/devcontainer.json", []byte(bad.json))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Fetch(context.Background(), cfg, Options{Local: local, LocalFrom: ".devcontainer"})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.json, err, bad.want)
		}
	}
}
