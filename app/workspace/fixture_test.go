package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/vm/vmtest"
)

// TestMain gives every test a git with no user or system configuration:
// a fresh HOME and global config file, and no walking up out of the
// temporary directory in search of a repository.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "workspace-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(cfg, []byte("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[safe]\n\tdirectory = *\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"HOME":                    home,
		"XDG_CONFIG_HOME":         filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL":       cfg,
		"GIT_CONFIG_NOSYSTEM":     "1",
		"GIT_CEILING_DIRECTORIES": os.TempDir(),
		// Set here to prove the package ignores them.
		"GIT_DIR":       "/nonexistent/.git",
		"GIT_WORK_TREE": "/nonexistent",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// gitT runs git for a test's own set-up and checks, in the same scrubbed
// environment as the package, and returns its trimmed output.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotepath=off", "-C", dir}, args...)...)
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, msg)
	}
	return strings.TrimRight(string(out), "\n")
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const testRemote = "https://example.com/me/répo.git"

// newRepo makes a repository with a few commits' worth of files, paths
// with spaces and non-ASCII names, and an origin remote (unless
// remote is ""). It returns its root.
func newRepo(t testing.TB, remote string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repos", "my répo with spaces")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "init", "-q", "-b", "main")
	gitT(t, root, "config", "user.name", "Test Person")
	gitT(t, root, "config", "user.email", "test@example.com")
	writeFile(t, filepath.Join(root, "README.md"), "# hello\n")
	writeFile(t, filepath.Join(root, "src", "main.go"), "package main\n\nfunc main() {}\n")
	writeFile(t, filepath.Join(root, "dir with space", "ünïcode file.txt"), "ünïcode\n")
	writeFile(t, filepath.Join(root, ".gitignore"), ".env\n*.log\nsecrets/\nout/\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "initial")
	if remote != "" {
		gitT(t, root, "remote", "add", "origin", remote)
	}
	return canonical(t, root)
}

// canonical is the path as git reports it (symlinks resolved).
func canonical(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func resolveT(t testing.TB, path string) Repo {
	t.Helper()
	r, err := Resolve(context.Background(), path)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", path, err)
	}
	return r
}

// vmClone is a session's clone as its VM sees it, simulated on the
// host as vm/vmtest does: the base disk's files unpacked with debugfs,
// the branch made with git checkout -b as the supervisor does, and the
// scripts meant for the guest run here with sh.
type vmClone struct {
	dir, id, branch, base string
	m                     *Mirror
	disk                  string
	info                  BaseInfo
	// stderr is what the last save printed there.
	stderr string
}

// sessionT builds Sandbar's repository of root and the base disk at its
// HEAD, and returns session id's clone on sandbar/<id>.
func sessionT(t testing.TB, root, id string) *vmClone {
	t.Helper()
	if _, err := exec.LookPath("debugfs"); err != nil {
		t.Skip("no debugfs (e2fsprogs) to read the base disk")
	}
	ctx := context.Background()
	data := t.TempDir()
	m, err := OpenMirror(ctx, filepath.Join(data, "projects", "1", "repo.git"))
	if err != nil {
		t.Fatalf("OpenMirror: %v", err)
	}
	src := resolveT(t, root)
	commit, err := m.Fetch(ctx, src, "", nil)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	info, err := m.BuildBase(ctx, BaseOptions{Source: src, Commit: commit, Dir: filepath.Join(data, "projects", "1", "bases")})
	if err != nil {
		t.Fatalf("BuildBase: %v", err)
	}
	// Virtualization.framework refuses a disk of any other size.
	if info.Size%512 != 0 {
		t.Fatalf("the base disk is %d bytes, not a whole number of 512-byte sectors", info.Size)
	}
	dir := filepath.Join(data, "sessions", "s ü "+id, "workspace")
	os.MkdirAll(filepath.Dir(dir), 0o755)
	if err := vmtest.UnpackBase(ctx, info.Path, dir); err != nil {
		t.Fatal(err)
	}
	branch := "sandbar/" + id
	gitT(t, dir, "checkout", "-q", "-b", branch)
	return &vmClone{dir: dir, id: id, branch: branch, base: commit, m: m, disk: info.Path, info: info}
}

// guest runs git in the clone the way the host asks the VM for status.
func (c *vmClone) guest(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", GuestGitScript, "git"}, args...)...)
	cmd.Dir, cmd.Env = c.dir, gitEnv()
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s", err, errb.String())
	}
	return string(out), nil
}

// save runs SaveScript in the clone and takes its output in.
func (c *vmClone) save(t testing.TB) SaveInfo {
	t.Helper()
	info, err := c.trySave(1 << 30)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	return info
}

func (c *vmClone) trySave(max int64) (SaveInfo, error) {
	cmd := exec.Command("sh", "-c", SaveScript, "sandbar-save", c.branch, c.base)
	cmd.Dir, cmd.Env = c.dir, gitEnv()
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return SaveInfo{}, err
	}
	if err := cmd.Start(); err != nil {
		return SaveInfo{}, err
	}
	info, ierr := c.m.ImportSave(context.Background(), out, c.id, max)
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	c.stderr = errb.String()
	if ierr != nil {
		return info, fmt.Errorf("%w (script: %v %s)", ierr, werr, errb.String())
	}
	return info, nil
}

func commitT(t testing.TB, dir, file, content, msg string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, filepath.FromSlash(file)), content)
	gitT(t, dir, "add", "--", file)
	gitT(t, dir, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

// snapshot is everything of a repository that Sandbar promises not to
// change: each working-tree file's bytes, mode and mtime, the index, HEAD
// and every ref except the ones named in except.
func snapshot(t testing.TB, root string, except ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := contentHash(p, fi)
		if err != nil {
			return err
		}
		if h == "" {
			h = "link"
		}
		m[rel] = fmt.Sprintf("%s %v %d", h, fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"HEAD", "index"} {
		p := gitT(t, root, "rev-parse", "--git-path", f)
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		s := sha256.Sum256(b)
		m[".git/"+f] = hex.EncodeToString(s[:]) + " " + fi.ModTime().Format(time.RFC3339Nano)
	}
	refs := gitT(t, root, "for-each-ref", "--format=%(refname) %(objectname)")
	for _, line := range strings.Split(refs, "\n") {
		name, obj, _ := strings.Cut(line, " ")
		skip := false
		for _, e := range except {
			skip = skip || name == e
		}
		if !skip {
			m["ref "+name] = obj
		}
	}
	return m
}

// contentHash is a regular file's SHA-256, or a symlink's target; ""
// for anything else.
func contentHash(p string, fi fs.FileInfo) (string, error) {
	switch {
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:]), nil
	case fi.Mode()&fs.ModeSymlink != 0:
		return os.Readlink(p)
	}
	return "", nil
}

func sameSnapshot(t testing.TB, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %q -> %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}
