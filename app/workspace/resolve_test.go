package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	root := newRepo(t, testRemote)
	head := gitT(t, root, "rev-parse", "HEAD")

	noRemote := newRepo(t, "")

	detached := newRepo(t, "")
	gitT(t, detached, "checkout", "-q", "--detach")

	tmp := canonical(t, t.TempDir())
	plain := filepath.Join(tmp, "just a földer")
	bare := filepath.Join(tmp, "bare répo.git")
	empty := filepath.Join(tmp, "empty répo")
	for _, d := range []string{plain, bare, empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitT(t, bare, "init", "-q", "--bare")
	gitT(t, empty, "init", "-q")

	tests := []struct {
		name    string
		path    string
		want    Repo
		wantErr []error
		msg     string
	}{
		{name: "root", path: root,
			want: Repo{Root: root, Name: "my répo with spaces", Branch: "main", Head: head, Remote: testRemote}},
		{name: "subdir", path: filepath.Join(root, "dir with space"),
			want: Repo{Root: root, Name: "my répo with spaces", Branch: "main", Head: head, Remote: testRemote, Subdir: "dir with space"}},
		{name: "relative-looking subdir with trailing slash", path: filepath.Join(root, "src") + "/",
			want: Repo{Root: root, Name: "my répo with spaces", Branch: "main", Head: head, Remote: testRemote, Subdir: "src"}},
		{name: "no remote", path: noRemote,
			want: Repo{Root: noRemote, Name: "my répo with spaces", Branch: "main", Head: gitT(t, noRemote, "rev-parse", "HEAD")}},
		{name: "detached", path: detached,
			want: Repo{Root: detached, Name: "my répo with spaces", Branch: "", Head: gitT(t, detached, "rev-parse", "HEAD")}},
		{name: "not a repo", path: plain, wantErr: []error{ErrNotRepo},
			msg: plain + " is not in a git repository: give the folder that holds .git, or run `git init` there"},
		{name: "file", path: filepath.Join(root, "README.md"), wantErr: []error{ErrNotRepo}, msg: "is a file"},
		{name: "bare", path: bare, wantErr: []error{ErrBareRepo},
			msg: bare + " is a bare repository, with no working tree: give a clone of it"},
		{name: "empty", path: empty, wantErr: []error{ErrEmptyRepo},
			msg: empty + " has no commits yet: commit something first"},
		{name: "missing", path: filepath.Join(tmp, "nöt there"), wantErr: []error{ErrNotRepo, fs.ErrNotExist},
			msg: "does not exist"},
		{name: "inside .git", path: filepath.Join(root, ".git", "refs"), wantErr: []error{ErrNotRepo}, msg: ".git folder"},
		{name: "empty path", path: "", wantErr: []error{ErrNotRepo}, msg: "no folder given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(context.Background(), tc.path)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Resolve(%q) = %+v, want an error", tc.path, got)
				}
				for _, want := range tc.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("error %q is not %v", err, want)
					}
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not say %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if got != tc.want {
				t.Errorf("Resolve(%q)\n got %+v\nwant %+v", tc.path, got, tc.want)
			}
		})
	}
}

func TestGitIdentityAndVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t, "")
	name, email := GitIdentity(ctx, root)
	if name != "Test Person" || email != "test@example.com" {
		t.Errorf("GitIdentity = %q, %q", name, email)
	}
	// The test's global config has no identity.
	if name, email := GitIdentity(ctx, t.TempDir()); name != "" || email != "" {
		t.Errorf("GitIdentity outside a repository = %q, %q, want empty", name, email)
	}
	v, err := GitVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if versionLess(v, "2.0") || strings.ContainsAny(v, " \n") {
		t.Errorf("GitVersion = %q", v)
	}
}

func TestVersionLess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"2.9.0", "2.29.0", true},
		{"2.29.0", "2.29.0", false},
		{"2.29", "2.29.0", false},
		{"2.39.5.windows.1", "2.29.0", false},
		{"2.28.1", "2.29.0", true},
		{"3.0.0-rc1", "2.29.0", false},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("versionLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://x-access-token:ghp_secret@github.com/me/r.git": "https://x-access-token@github.com/me/r.git",
		"https://github.com/me/r.git":                           "https://github.com/me/r.git",
		"https://me@github.com/me/r.git":                        "https://me@github.com/me/r.git",
		"git@github.com:me/r.git":                               "git@github.com:me/r.git",
		"/local/path with space":                                "/local/path with space",
		testRemote:                                              testRemote,
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
