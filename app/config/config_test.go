package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func envOf(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestResolve(t *testing.T) {
	tests := []struct {
		name                    string
		env                     map[string]string
		home, images, downloads string
	}{
		{
			name:      "xdg",
			env:       map[string]string{"HOME": "/home/ann", "XDG_DATA_HOME": "/data", "XDG_CACHE_HOME": "/cache"},
			home:      "/data/sandbar",
			images:    "/data/sandbar/images",
			downloads: "/cache/sandbar/downloads",
		},
		{
			name:      "home only",
			env:       map[string]string{"HOME": "/home/ann"},
			home:      "/home/ann/.local/share/sandbar",
			images:    "/home/ann/.local/share/sandbar/images",
			downloads: "/home/ann/.cache/sandbar/downloads",
		},
		{
			name:      "override with spaces and unicode",
			env:       map[string]string{"HOME": "/home/ann", "SANDBAR_HOME": "/tmp/my dätä", "SANDBAR_IMAGE_DIR": "/img"},
			home:      "/tmp/my dätä",
			images:    "/img",
			downloads: "/home/ann/.cache/sandbar/downloads",
		},
		{
			name:      "relative XDG is ignored as the spec says",
			env:       map[string]string{"HOME": "/h", "XDG_DATA_HOME": "rel", "XDG_CACHE_HOME": "rel"},
			home:      "/h/.local/share/sandbar",
			images:    "/h/.local/share/sandbar/images",
			downloads: "/h/.cache/sandbar/downloads",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if p.Home != tc.home || p.Images != tc.images || p.Downloads != tc.downloads {
				t.Errorf("got %+v, want home %q images %q downloads %q", p, tc.home, tc.images, tc.downloads)
			}
		})
	}
}

func TestResolveNoHome(t *testing.T) {
	_, err := Resolve(envOf(nil))
	if err == nil {
		t.Fatal("want an error without HOME")
	}
}

func TestEnsureAndSessionPaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a b", "ü")
	p, err := Resolve(envOf(map[string]string{"SANDBAR_HOME": root, "HOME": root}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{p.Home, p.Sessions(), p.Images, p.Downloads} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", dir, err)
		}
	}
	if got, want := p.Session("abc"), filepath.Join(root, "sessions", "abc"); got != want {
		t.Errorf("Session = %q, want %q", got, want)
	}
	if got, want := p.DB(), filepath.Join(root, "sandbar.db"); got != want {
		t.Errorf("DB = %q, want %q", got, want)
	}
}

// TestEnsureMakesTheDataDirectoryPrivate: under umask 0, a new data
// directory and its sessions folder are 0700, and one an older Sandbar
// left 0755 is tightened.
func TestEnsureMakesTheDataDirectoryPrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	root := t.TempDir()
	p, err := Resolve(envOf(map[string]string{"SANDBAR_HOME": filepath.Join(root, "home"), "HOME": root}))
	if err != nil {
		t.Fatal(err)
	}
	mode := func(dir string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{p.Home, p.Sessions()} {
		if got := mode(dir); got != 0o700 {
			t.Errorf("new %s: mode %#o, want 0700", dir, got)
		}
	}
	for _, dir := range []string{p.Home, p.Sessions()} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{p.Home, p.Sessions()} {
		if got := mode(dir); got != 0o700 {
			t.Errorf("old %s left 0755: mode %#o after Ensure, want 0700", dir, got)
		}
	}
}
