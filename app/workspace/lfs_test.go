package workspace

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

func TestCloneListsLFSPointers(t *testing.T) {
	t.Parallel()
	root := newRepo(t, "")
	pointer := "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	writeFile(t, filepath.Join(root, ".gitattributes"), "*.bin filter=lfs diff=lfs merge=lfs -text\n")
	writeFile(t, filepath.Join(root, "model.bin"), pointer)
	writeFile(t, filepath.Join(root, "data dir", ".gitattributes"), "*.csv filter=lfs diff=lfs merge=lfs -text\n")
	writeFile(t, filepath.Join(root, "data dir", "big ü.csv"), pointer)
	writeFile(t, filepath.Join(root, "data dir", "small.txt"), "not lfs\n")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "lfs files")

	dest := filepath.Join(t.TempDir(), "ws")
	info, err := Clone(context.Background(), CloneOptions{Source: resolveT(t, root), Dest: dest, Branch: "sandbar/lfs"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"data dir/big ü.csv", "model.bin"}; !slices.Equal(info.LFSPointers, want) {
		t.Errorf("LFSPointers = %q, want %q", info.LFSPointers, want)
	}
	if got := readFile(t, filepath.Join(dest, "model.bin")); got != pointer {
		t.Errorf("model.bin = %q, want the pointer file", got)
	}

	plain, _ := cloneT(t, newRepo(t, ""), "sandbar/plain")
	if lfs, err := lfsPointers(context.Background(), plain); err != nil || lfs != nil {
		t.Errorf("a repository without LFS: %q, %v", lfs, err)
	}
}
