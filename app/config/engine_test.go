package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEngineFiles(t *testing.T) {
	p := Paths{Home: "/data/sandbar"}
	if got, want := p.EngineLock(), "/data/sandbar/engine.lock"; got != want {
		t.Errorf("EngineLock = %s, want %s", got, want)
	}
	if got, want := p.EngineLog(), "/data/sandbar/engine.log"; got != want {
		t.Errorf("EngineLog = %s, want %s", got, want)
	}
	if got, want := p.EngineSocket(), "/data/sandbar/engine.sock"; got != want {
		t.Errorf("EngineSocket = %s, want %s", got, want)
	}
	long := Paths{Home: "/" + strings.Repeat("long-folder-name/", 8)}
	s := long.EngineSocket()
	if len(s) >= maxSocketPath || !strings.HasPrefix(filepath.Base(s), "sandbar-") {
		t.Errorf("a long data directory's socket is %s (%d bytes): want a short one in the temp directory", s, len(s))
	}
	if other := (Paths{Home: long.Home + "x"}).EngineSocket(); other == s {
		t.Errorf("two long data directories share the socket %s", s)
	}
}

func TestSocketDir(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	long := "/" + strings.Repeat("long-folder-name/", 8)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"runtime dir", map[string]string{"HOME": "/h", "SANDBAR_HOME": long, "XDG_RUNTIME_DIR": "/run/user/7", "TMPDIR": "/t"}, "/run/user/7"},
		{"temp dir", map[string]string{"HOME": "/h", "SANDBAR_HOME": long, "TMPDIR": "/t"}, "/t/sandbar-" + uid},
		{"no temp dir", map[string]string{"HOME": "/h", "SANDBAR_HOME": long, "XDG_RUNTIME_DIR": "relative"}, "/tmp/sandbar-" + uid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Dir(p.EngineSocket()); got != tc.want {
				t.Errorf("the socket of a long data directory is in %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSocketDirChecks: the directory of a socket outside the data
// directory is made private, and one that is not the person's alone is
// refused, by the engine and by its clients.
func TestSocketDirChecks(t *testing.T) {
	tmp := t.TempDir()
	p := Paths{Home: "/" + strings.Repeat("long-folder-name/", 8), Runtime: filepath.Join(tmp, "run")}
	if err := p.CheckSocketDir(); err != nil {
		t.Errorf("a socket directory that is not there yet: %v", err)
	}
	if err := p.EnsureSocketDir(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p.Runtime); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("the socket directory made: %v, %v; want a 0700 directory", fi.Mode(), err)
	}
	if err := p.CheckSocketDir(); err != nil {
		t.Errorf("the socket directory made: %v", err)
	}

	os.Chmod(p.Runtime, 0o777)
	for _, check := range []func() error{p.EnsureSocketDir, p.CheckSocketDir} {
		if err := check(); err == nil || !strings.Contains(err.Error(), "other users") {
			t.Errorf("a socket directory others may write: %v; want a refusal", err)
		}
	}
	os.Chmod(p.Runtime, 0o700)

	// Squatted: a link, a file, or another user's directory.
	os.Remove(p.Runtime)
	target := t.TempDir()
	os.Symlink(target, p.Runtime)
	if err := p.EnsureSocketDir(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a link in place of the socket directory: %v; want a refusal", err)
	}
	os.Remove(p.Runtime)
	os.WriteFile(p.Runtime, nil, 0o600)
	if err := p.CheckSocketDir(); err == nil {
		t.Error("a file in place of the socket directory was taken")
	}
	os.Remove(p.Runtime)
	if err := privateDir(target, os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "belongs to user") {
		t.Errorf("another user's directory: %v; want a refusal naming its owner", err)
	}
}
