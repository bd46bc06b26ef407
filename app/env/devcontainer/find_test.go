package devcontainer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeRepo makes a repository folder with files (path → content).
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindOrder(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		named string
		want  string
	}{
		{"none", map[string]string{"main.go": "package main"}, "", ""},
		{"root file", map[string]string{RootPath: "{}"}, "", RootPath},
		{"folder file first", map[string]string{RootPath: "{}", DefaultPath: "{}"}, "", DefaultPath},
		{"settings first", map[string]string{RootPath: "{}", DefaultPath: "{}", "env/dev.json": "{}"}, "env/dev.json", "env/dev.json"},
		{".devcontainer is a file", map[string]string{".devcontainer": "x", RootPath: "{}"}, "", RootPath},
		{"settings path cleaned", map[string]string{"env/dev.json": "{}"}, "./env//dev.json", "env/dev.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(writeRepo(t, tt.files), tt.named)
			if err != nil || got != tt.want {
				t.Errorf("Find = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// A link inside the repository to a file inside it is followed.
func TestFindLinkInside(t *testing.T) {
	dir := writeRepo(t, map[string]string{"config/dev.json": `{"image": "debian"}`})
	if err := os.Mkdir(filepath.Join(dir, ".devcontainer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../config/dev.json", filepath.Join(dir, DefaultPath)); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir, "")
	if err != nil || c.Image != "debian" {
		t.Fatalf("Load through a link inside the repository = %+v, %v", c, err)
	}
}

func TestFindHostile(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"image": "stolen"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, repo string)
		named string
		want  string // a part of the error
	}{
		{"link out of the repository", func(t *testing.T, repo string) {
			mkdir(t, repo, ".devcontainer")
			symlink(t, secret, filepath.Join(repo, DefaultPath))
		}, "", ".devcontainer/devcontainer.json is a link that leads out of the repository; Sandbar reads only files inside it: replace the link with the file itself"},
		{"relative link out of the repository", func(t *testing.T, repo string) {
			symlink(t, "../../../../../../../../.."+secret, filepath.Join(repo, RootPath))
		}, "", ".devcontainer.json is a link that leads out of the repository"},
		{"folder linked out of the repository", func(t *testing.T, repo string) {
			if err := os.WriteFile(filepath.Join(outside, "devcontainer.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, filepath.Join(repo, ".devcontainer"))
		}, "", ".devcontainer/devcontainer.json cannot be read inside the repository (a folder on its way may be a link out of it)"},
		{"link to a device", func(t *testing.T, repo string) {
			symlink(t, "/dev/zero", filepath.Join(repo, RootPath))
		}, "", ".devcontainer.json is a link that leads out of the repository"},
		{"dangling link", func(t *testing.T, repo string) {
			symlink(t, "nothing-here.json", filepath.Join(repo, RootPath))
		}, "", ".devcontainer.json is a link to nothing: replace it with the file"},
		{"FIFO", func(t *testing.T, repo string) {
			mkdir(t, repo, ".devcontainer")
			if err := syscall.Mkfifo(filepath.Join(repo, DefaultPath), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "", ".devcontainer/devcontainer.json is a named pipe (FIFO), not a file; Sandbar reads only regular files from a repository: replace it with the file"},
		{"folder", func(t *testing.T, repo string) {
			mkdir(t, repo, RootPath)
		}, "", ".devcontainer.json is a folder, not a file"},
		{"huge file", func(t *testing.T, repo string) {
			f, err := os.Create(filepath.Join(repo, RootPath))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(1 << 30); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "", ".devcontainer.json is 1073741824 bytes, over the 1048576 a devcontainer.json may have: shrink it"},
		{"settings name ..", func(t *testing.T, repo string) {}, "../secret.json",
			`the project's settings name "../secret.json" as its devcontainer.json: name a file inside the repository, like ".devcontainer/devcontainer.json", without ".."`},
		{"settings name a path that climbs back", func(t *testing.T, repo string) {}, "a/../../secret.json",
			`the project's settings name "a/../../secret.json"`},
		{"settings name an absolute path", func(t *testing.T, repo string) {}, secret,
			`the project's settings name "` + secret + `" as its devcontainer.json: name a file inside the repository`},
		{"settings name a missing file", func(t *testing.T, repo string) {
			writeFile(t, filepath.Join(repo, DefaultPath), "{}")
		}, "env/dev.json", "the project's settings name env/dev.json as its devcontainer.json, and the repository has no such file: fix the setting or add the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			tt.setup(t, repo)
			got, err := Find(repo, tt.named)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Find = %q, %v; want an error with %q", got, err, tt.want)
			}
			if c, err := Load(repo, tt.named); err == nil || c != nil {
				t.Errorf("Load = %+v, %v; want the error too", c, err)
			}
		})
	}
}

// The repository may change between Find and Read: Read checks again, so a
// FIFO swapped in is refused (before any open; the open itself is
// O_NONBLOCK besides) and a file grown past the bound is not read whole.
func TestReadRechecks(t *testing.T) {
	repo := writeRepo(t, map[string]string{RootPath: "{}"})
	rel, err := Find(repo, "")
	if err != nil || rel != RootPath {
		t.Fatalf("Find = %q, %v", rel, err)
	}
	full := filepath.Join(repo, RootPath)
	if err := os.Remove(full); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(full, 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(repo, rel); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("Read of a FIFO = %q, %v; want it refused", data, err)
	}
	if err := os.Remove(full); err != nil {
		t.Fatal(err)
	}
	writeFile(t, full, strings.Repeat(" ", MaxFileSize+1))
	if data, err := Read(repo, rel); err == nil || !strings.Contains(err.Error(), "shrink it") {
		t.Errorf("Read of a grown file = %d bytes, %v; want it refused", len(data), err)
	}
	if _, err := Read(repo, "../x.json"); err == nil {
		t.Errorf("Read of ../x.json succeeded")
	}
}

func mkdir(t *testing.T, repo, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(repo, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
