package dockerbuild

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestParseBases(t *testing.T) {
	host := "linux/" + runtime.GOARCH
	cases := []struct {
		name, file string
		args       map[string]string
		target     string
		bases      []string
		stages     []string // name=from
		text       string   // the builder's copy, when checked
	}{
		{name: "one", file: "FROM debian:12\nRUN true\n", bases: []string{"debian:12"}, stages: []string{"=debian:12"},
			text: "FROM localhost/sandbar-base-0:latest\nRUN true\n"},
		{name: "multi-stage and a stage reference", file: "FROM golang:1.22 AS build\nRUN go build\nFROM debian:12\nCOPY --from=build /x /x\nFROM build AS again\n",
			bases: []string{"golang:1.22", "debian:12"}, stages: []string{"build=golang:1.22", "=debian:12", "again=build"}},
		{name: "ARG with a default, overridden by build.args", file: "ARG VARIANT=bookworm\nARG REG\nFROM ${REG:-docker.io}/library/debian:$VARIANT\n",
			args: map[string]string{"VARIANT": "trixie"}, bases: []string{"docker.io/library/debian:trixie"}},
		{name: "ARG from an earlier ARG", file: "ARG A=1\nARG B=img:${A}\nFROM $B\n", bases: []string{"img:1"}},
		{name: "platform of this machine", file: "FROM --platform=$BUILDPLATFORM alpine:3 AS a\nFROM --platform=" + host + " alpine:3\n",
			bases: []string{"alpine:3"}, stages: []string{"a=alpine:3", "=alpine:3"}},
		{name: "scratch is no image", file: "FROM scratch\nCOPY x /x\n", bases: nil, stages: []string{"=scratch"}},
		{name: "continued FROM keeps the line numbers", file: "FROM \\\n  debian:12 \\\n  AS base\nRUN a \\\n  b\n",
			bases: []string{"debian:12"}, text: "FROM localhost/sandbar-base-0:latest AS base\n\n\nRUN a \\\n  b\n"},
		{name: "COPY --from an image", file: "FROM debian:12\nCOPY --from=busybox:1 /bin/busybox /bin/\n", bases: []string{"debian:12", "busybox:1"},
			text: "FROM localhost/sandbar-base-0:latest\nCOPY --from=localhost/sandbar-base-1:latest /bin/busybox /bin/\n"},
		{name: "target: later stages' images are not pulled", file: "FROM a:1 AS one\nFROM b:1 AS two\nFROM c:1\n", target: "two",
			bases: []string{"a:1", "b:1"}},
		{name: "comments, blank lines and a lower-case keyword", file: "# hello\n\nfrom debian:12 as base\n# inside\nrun true\n", bases: []string{"debian:12"}},
		{name: "escape directive", file: "# escape=`\nFROM debian:12 `\n  AS b\n", bases: []string{"debian:12"}, stages: []string{"b=debian:12"}},
		{name: "digest", file: "FROM debian@sha256:" + strings.Repeat("a", 64) + "\n", bases: []string{"debian@sha256:" + strings.Repeat("a", 64)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			df, err := Parse("Dockerfile", []byte(c.file), c.args, c.target)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range df.Bases {
				got = append(got, b.Ref)
			}
			if strings.Join(got, " ") != strings.Join(c.bases, " ") {
				t.Errorf("bases %q, want %q", got, c.bases)
			}
			if c.stages != nil {
				var st []string
				for _, s := range df.Stages {
					st = append(st, s.Name+"="+s.From)
				}
				if strings.Join(st, " ") != strings.Join(c.stages, " ") {
					t.Errorf("stages %q, want %q", st, c.stages)
				}
			}
			if c.text != "" && string(df.Text) != c.text {
				t.Errorf("the builder's copy:\n%q\nwant\n%q", df.Text, c.text)
			}
			if n := strings.Count(string(df.Text), "\n"); n != strings.Count(c.file, "\n") {
				t.Errorf("the builder's copy has %d lines, the file %d", n, strings.Count(c.file, "\n"))
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct{ name, file, target, want string }{
		{"no FROM", "RUN true\n", "", "before the first FROM"},
		{"empty", "# nothing\n", "", "has no FROM line"},
		{"unknown instruction", "FROM a:1\nFETCH x\n", "", "line 2: FETCH is not a Dockerfile instruction"},
		{"another platform", "FROM --platform=linux/s390x a:1\n", "", "emulates no other"},
		{"an unknown FROM flag", "FROM --pull a:1\n", "", "only flag"},
		{"heredoc", "FROM a:1\nRUN <<EOF\necho\nEOF\n", "", "heredoc"},
		{"syntax directive", "# syntax=docker/dockerfile:1\nFROM a:1\n", "", "BuildKit frontend"},
		{"FROM of an unset argument", "ARG BASE\nFROM $BASE\n", "", "names no image"},
		{"a bad reference", "FROM Not_An:Image:ref\n", "", "not an image reference"},
		{"missing target", "FROM a:1 AS one\n", "two", `build.target "two": the Dockerfile has no stage of that name (it has stages one)`},
		{"RUN --mount from an image", "FROM a:1\nRUN --mount=type=bind,from=b:1,target=/b true\n", "", "mounting an image is not supported"},
		{"COPY --from a variable", "FROM a:1\nARG X\nCOPY --from=$X /a /a\n", "", "a variable there is not supported"},
		{"bad substitution", "FROM ${A:?x}\n", "", "Sandbar reads ${NAME}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("Dockerfile", []byte(c.file), nil, c.target)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a ParseError saying %q", err, c.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	base := KeyInputs{Dockerfile: ".devcontainer/Dockerfile", DockerfileID: "a", Context: ".devcontainer", ContextID: "t",
		Args: map[string]string{"A": "1", "B": "2"}, Target: "", Bases: []string{"sha256:1"}, Platform: "linux/amd64", Builder: "buildah 1"}
	k := Key(base)
	if len(k) != 64 {
		t.Fatalf("key %q", k)
	}
	same := base
	same.Args = map[string]string{"B": "2", "A": "1"}
	if Key(same) != k {
		t.Error("the same arguments in another order give another key")
	}
	changes := map[string]func(*KeyInputs){
		"dockerfile": func(k *KeyInputs) { k.DockerfileID = "b" },
		"context":    func(k *KeyInputs) { k.ContextID = "u" },
		"args":       func(k *KeyInputs) { k.Args = map[string]string{"A": "1", "B": "3"} },
		"arg split":  func(k *KeyInputs) { k.Args = map[string]string{"A": "1B", "": "2"} },
		"target":     func(k *KeyInputs) { k.Target = "dev" },
		"base":       func(k *KeyInputs) { k.Bases = []string{"sha256:2"} },
		"platform":   func(k *KeyInputs) { k.Platform = "linux/arm64" },
		"builder":    func(k *KeyInputs) { k.Builder = "buildah 2" },
		"path":       func(k *KeyInputs) { k.Dockerfile = "Dockerfile" },
	}
	for name, ch := range changes {
		in := base
		ch(&in)
		if Key(in) == k {
			t.Errorf("a change of %s keeps the key", name)
		}
	}
}

// TestParseContextSources: the context paths a build reads are found, and
// what cannot be resolved without the build is widened, never dropped,
// since the person's trust covers exactly these.
func TestParseContextSources(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string
	}{
		{"copy and run a script", "FROM debian:12\nCOPY setup.sh /tmp/\nRUN /tmp/setup.sh\n", []string{"setup.sh"}},
		{"several sources, ADD, JSON form, once each", "FROM debian:12\nCOPY a.sh ./b/c.txt /x/\nADD [\"d.tar\", \"/y\"]\nCOPY a.sh /z\n", []string{"a.sh", "b/c.txt", "d.tar"}},
		{"the whole context", "FROM debian:12\nCOPY . /src\n", []string{"."}},
		{"a glob is widened to its folder", "FROM debian:12\nCOPY scripts/*.sh /s/\nCOPY *.json /j/\n", []string{"scripts", "."}},
		{"a variable is widened", "FROM debian:12\nARG F=x\nCOPY lib/$F /f\n", []string{"lib"}},
		{"leaving the context is all of it", "FROM debian:12\nCOPY ../secret /s\n", []string{"."}},
		{"from a stage or an image is no context", "FROM golang:1 AS b\nFROM debian:12\nCOPY --from=b /x /x\nCOPY --from=alpine:3 /y /y\n", nil},
		{"ADD of a URL is no context", "FROM debian:12\nADD https://example.invalid/x.tgz /x\n", nil},
		{"flags before the sources", "FROM debian:12\nCOPY --chown=1000:1000 --chmod=755 run.sh /r\n", []string{"run.sh"}},
		{"RUN bind mounts of the context", "FROM debian:12\nRUN --mount=type=bind,source=tools,target=/t /t/go\nRUN --mount=type=cache,target=/c true\nRUN --mount=target=/all true\n", []string{"tools", "."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			df, err := Parse("Dockerfile", []byte(c.file), nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(df.ContextSources, "|") != strings.Join(c.want, "|") {
				t.Errorf("context sources %q, want %q", df.ContextSources, c.want)
			}
		})
	}
}
