package devcontainer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics, and every error it gives is an *Error on
// a line and column inside the file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.jsonc")
	more, _ := filepath.Glob("testdata/*/.devcontainer/devcontainer.json")
	for _, p := range append(seeds, more...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(keyShuffled))
	f.Add([]byte(`{"mounts": ["type=volume,target=/a", {"type": "tmpfs", "target": "/b"}], "forwardPorts": ["h:1", 2]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "sub/devcontainer.json"
		c, err := Parse(file, data)
		if err == nil {
			_ = Key(c.KeyInput("d", "c"))
			for _, cmd := range []Command{c.OnCreateCommand, c.UpdateContentCommand, c.PostCreateCommand, c.PostStartCommand} {
				for _, r := range cmd.Runs() {
					if len(r.Argv) == 0 || r.Argv[0] == "" {
						t.Fatalf("a Run with no program: %q", r)
					}
				}
			}
			for _, m := range c.Mounts {
				if systemPath(m.Target) || m.Target == GuestWorkspace || (m.Type != MountVolume && m.Type != MountTmpfs) {
					t.Fatalf("mount %+v passed", m)
				}
			}
			if c.Build != nil && (!validRepoPath(c.Build.Dockerfile) || !validRepoPath(c.Build.Context)) {
				t.Fatalf("build %+v leaves the repository", c.Build)
			}
			return
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		lines := bytes.Split(data, []byte("\n"))
		for _, e := range errs {
			var pe *Error
			if !errors.As(e, &pe) {
				t.Fatalf("error %T %v is no *Error", e, e)
			}
			if pe.File != file || pe.Line < 1 || pe.Line > len(lines) {
				t.Fatalf("error %v is not on a line of the file (%d lines)", pe, len(lines))
			}
			if n := utf8.RuneCount(lines[pe.Line-1]); pe.Col < 1 || pe.Col > n+1 {
				t.Fatalf("error %v is past its line (%d characters)", pe, n)
			}
		}
	})
}

func validRepoPath(p string) bool {
	return p == "." || (p != "" && !filepath.IsAbs(p) && filepath.IsLocal(p))
}
