package session

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveSessionDirWithReadOnlyExports: a session's folder goes whole,
// its read-only export and a half-written one left by a crash included.
// (Run as root, folder modes stop nothing: the case it guards is a
// person's own uid.)
func TestRemoveSessionDirWithReadOnlyExports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sess [1]")
	for _, d := range []string{ExportDir + "/sub", ".export-123/sub"} {
		p := filepath.Join(dir, filepath.FromSlash(d))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o444)
		os.Chmod(p, 0o555)
		os.Chmod(filepath.Dir(p), 0o555)
	}
	if err := removeSessionDir(dir); err != nil {
		t.Fatalf("removeSessionDir: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
}
