//go:build linux

package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exportScript plants symlinks in the agent's workspace that lead out of
// the export when it is judged by anything but the host's own resolution
// (issue 21, finding 2): case twins (A -> . beside a -> a deep folder,
// and x through A, up past the host's /), NFC/NFD twins of é, links to
// links, links into links then up, an absolute link, a climb from a
// folder. The ".." chains are longer than the export's depth on the host
// (its path has fewer than 16 parts), and shorter than the twin's
// folders, so keyed by lower case x stayed inside.
const exportScript = scriptHead + `
E1=$(printf '\303\251')   # é, NFC
E2=$(printf 'e\314\201')  # é, NFD
UP=../../../../../../../../../../../../../../../..
mkdir -p d/e || fail mkdir
echo inside > d/file || fail write
ln -s . A || fail A
ln -s d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d a || fail a
ln -s A/$UP x || fail x
ln -s . "$E1" || fail nfc
ln -s d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d "$E2" || fail nfd
ln -s "$E1/$UP" y || fail y
ln -s x z || fail z
ln -s A/A/A/.. up || fail up
ln -s / abs || fail abs
ln -s ../$UP d/climb || fail climb
ln -s ../../A d/e/back || fail back
ln -s d/e/back/.. w || fail w
ln -s file d/ok || fail ok
` + scriptTail

// TestHostileExport: the agent plants exportScript in its workspace; the
// host runs `sandbar export ID` (the command line's Files) on the running
// session. Every path in the export resolves inside it, as the host's
// own filesystem resolves it (filepath.EvalSymlinks), and the export
// still holds the agent's files and the symlinks that stay inside.
func TestHostileExport(t *testing.T) {
	h := newHostileWorld(t)
	h.commitScript(exportScript)
	id := h.startID("--repo", h.repo, "--agent", "sh hostile.sh", "--cpus", "1", "--memory", "768", "--no-network")
	h.waitPlanted(id, "hostile: planted", 4*time.Minute)

	r := h.step("export", "export", id)
	if r.hung || r.code != 0 {
		t.Fatalf("sandbar export exited %d\nstdout: %s\nstderr: %s", r.code, clip(r.out), clip(r.errOut))
	}
	dir := strings.TrimSpace(r.out)
	if strings.Count(dir, "\n") > 0 || !filepath.IsAbs(dir) {
		t.Fatalf("sandbar export printed %q, want the export's folder alone", r.out)
	}
	home, err := filepath.EvalSymlinks(h.home)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatalf("the export %s: %v", dir, err)
	}
	if rel, err := filepath.Rel(home, root); err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("the export %s is not in the data folder %s", root, home)
	}
	var paths []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		paths = append(paths, rel)
		got, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // leads nowhere: nothing outside is reached either
		}
		if r, _ := filepath.Rel(root, got); r == ".." || strings.HasPrefix(r, "../") {
			t.Errorf("export/%s resolves to %s, outside the export", rel, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the export at %s holds %q", root, paths)
	if b, err := os.ReadFile(filepath.Join(root, "d", "ok")); err != nil || string(b) != "inside\n" {
		t.Errorf("export/d/ok (a symlink to a file beside it) reads %q, %v; want the agent's file", b, err)
	}
	for _, name := range []string{"A", "a", "d/e/back", "hostile.sh"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			t.Errorf("export/%s, which stays inside, is missing: %v", name, err)
		}
	}
	for _, name := range []string{"x", "y", "abs", "up", "d/climb", "w"} {
		if _, err := os.Lstat(filepath.Join(root, name)); !os.IsNotExist(err) {
			t.Errorf("export/%s, which leads out, was written (%v)", name, err)
		}
	}
	// Files/Editor would open the same folder: a second export of the
	// same work is the same folder.
	if again := h.step("export again", "export", id); strings.TrimSpace(again.out) != dir {
		t.Errorf("a second export printed %q, want %q", again.out, dir)
	}
}
