package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoSettings: each kind's files are read from the working tree,
// links and odd files listed with their problem and never followed; any
// change to a kind's file set is a new hash, and the diff shows it.
func TestRepoSettings(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	read := func() map[string]RepoSettings {
		t.Helper()
		all, err := ReadRepoSettings(root)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]RepoSettings{}
		for _, s := range all {
			m[s.Kind] = s
		}
		return m
	}
	empty := read()
	if len(empty) != 3 || empty[SettingsNetwork].Present() || empty[SettingsInclude].Present() || empty[SettingsEnvironment].Present() {
		t.Fatalf("an empty folder: %+v", empty)
	}
	writeFile(t, filepath.Join(root, ".sandbar", "network"), "allow a.example\n")
	writeFile(t, filepath.Join(root, ".sandbarinclude"), ".env\n")
	writeFile(t, filepath.Join(root, ".devcontainer", "devcontainer.json"), `{"image":"x"}`)
	writeFile(t, filepath.Join(root, ".devcontainer", "sub", "Dockerfile"), "FROM x\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(root, ".devcontainer", "link")); err != nil {
		t.Fatal(err)
	}
	m := read()
	net := m[SettingsNetwork]
	if f, ok := net.File(".sandbar/network"); !ok || string(f.Data) != "allow a.example\n" {
		t.Errorf("network: %+v", net)
	}
	env := m[SettingsEnvironment]
	if got := env.Names(); got != ".devcontainer/devcontainer.json, .devcontainer/link, .devcontainer/sub/Dockerfile" {
		t.Errorf("environment files: %s", got)
	}
	if f, _ := env.File(".devcontainer/link"); f.Problem == "" || f.Data != nil {
		t.Errorf("a symlink was read: %+v", f)
	}
	if string(m[SettingsInclude].IncludeText()) != ".env\n\n" {
		t.Errorf("include text %q", m[SettingsInclude].IncludeText())
	}

	// Same content, same hash; an edit, a new file or a rename is another.
	h := net.Hash()
	if read()[SettingsNetwork].Hash() != h {
		t.Error("the hash of unchanged files changed")
	}
	writeFile(t, filepath.Join(root, ".sandbar", "network"), "allow a.example\nallow 0.0.0.0/0:*\n")
	changed := read()[SettingsNetwork]
	if changed.Hash() == h {
		t.Error("an edited network file kept its hash")
	}
	if d := changed.Diff(net); d != "--- .sandbar/network\n allow a.example\n+allow 0.0.0.0/0:*\n" {
		t.Errorf("diff:\n%s", d)
	}
	if d := changed.Diff(RepoSettings{}); !strings.HasPrefix(d, "--- .sandbar/network (new)\n+allow a.example\n") {
		t.Errorf("diff from nothing:\n%s", d)
	}
	back, err := DecodeRepoSettings(changed.Encode())
	if err != nil || back.Hash() != changed.Hash() {
		t.Errorf("encoded and decoded: %+v, %v", back, err)
	}
	inc := m[SettingsInclude]
	writeFile(t, filepath.Join(root, ".worktreeinclude"), "")
	if read()[SettingsInclude].Hash() == inc.Hash() {
		t.Error("a new empty include list kept the hash")
	}

	// A .sandbar that is a link is not followed.
	os.RemoveAll(filepath.Join(root, ".sandbar"))
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "network"), "allow *\n")
	if err := os.Symlink(other, filepath.Join(root, ".sandbar")); err != nil {
		t.Fatal(err)
	}
	if f, ok := read()[SettingsNetwork].File(".sandbar/network"); !ok || f.Problem == "" || f.Data != nil {
		t.Errorf("network through a linked .sandbar: %+v", f)
	}
}

func TestLineDiff(t *testing.T) {
	t.Parallel()
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\n"
	if got := LineDiff(old, strings.Replace(old, "e\n", "E\n", 1)); got != "…\n b\n c\n d\n-e\n+E\n f\n g\n h\n…\n" {
		t.Errorf("one line changed:\n%s", got)
	}
	if got := LineDiff("", "x\n"); got != "+x\n" {
		t.Errorf("from nothing: %q", got)
	}
	if got := LineDiff("x\n", "x\n"); got != "" {
		t.Errorf("no change: %q", got)
	}
}
