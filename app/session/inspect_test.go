package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbar/app/config"
)

// TestInspect: what a session's directory says is read back from its
// files alone: a missing directory is no error, small files are trimmed,
// a file Sandbar would never write (too large, a symlink) is a problem
// and not a value, and a legacy clone is told apart.
func TestInspect(t *testing.T) {
	paths := config.Paths{Home: t.TempDir()}
	d := paths.SessionDir("s1")

	in, err := Inspect(d)
	if err != nil || in.Exists || in.BaseCommit != "" || in.AgentLog != nil {
		t.Fatalf("missing directory: %+v, %v", in, err)
	}

	if err := os.MkdirAll(d.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	saved := time.Date(2026, 5, 1, 12, 0, 0, 5, time.UTC)
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(d.BaseCommit(), "0123abcd\n")
	write(d.BaseDisk(), "/data/projects/1/bases/base-0123.ext4\n")
	write(d.SavedAt(), saved.Format(time.RFC3339Nano)+"\n")
	write(d.SaveError(), notSavedSinceBoot+"\n")
	write(d.AgentLog(), "one line\n")
	f, err := os.Create(d.Scratch())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: 1 GiB long, nothing allocated
		t.Fatal(err)
	}
	f.Close()

	in, err = Inspect(d)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Exists || in.BaseCommit != "0123abcd" || in.BaseDisk != "/data/projects/1/bases/base-0123.ext4" ||
		!in.SavedAt.Equal(saved) || in.SaveError != notSavedSinceBoot || in.Legacy || len(in.Problems) > 0 {
		t.Errorf("Inspect = %+v", in)
	}
	if in.AgentLog == nil || in.AgentLog.Size != int64(len("one line\n")) || in.AgentLog.Path != d.AgentLog() {
		t.Errorf("agent log = %+v", in.AgentLog)
	}
	if in.Scratch == nil || in.Scratch.Size != 1<<30 || in.Scratch.Allocated >= 1<<20 {
		t.Errorf("sparse scratch disk = %+v, want 1 GiB long with almost nothing allocated", in.Scratch)
	}
	if in.Transcript != nil || in.Console != nil || in.Export != nil || in.NetworkRepo != nil {
		t.Errorf("files that are not there: %+v %+v %+v %+v", in.Transcript, in.Console, in.Export, in.NetworkRepo)
	}

	// What Sandbar never writes is not believed.
	write(d.BaseCommit(), strings.Repeat("x", maxSessionFile+1))
	os.Remove(d.SaveError())
	if err := os.Symlink("/etc/hostname", d.SaveError()); err != nil {
		t.Fatal(err)
	}
	in, _ = Inspect(d)
	if in.BaseCommit != "" || in.SaveError != "" || len(in.Problems) != 2 {
		t.Errorf("oversized base-commit and symlinked save-error: %q %q, problems %q", in.BaseCommit, in.SaveError, in.Problems)
	}

	// A clone an older Sandbar shared, without a base disk, is legacy.
	if err := os.MkdirAll(filepath.Join(d.LegacyWorkspace(), ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if in, _ := Inspect(d); in.Legacy {
		t.Error("a base disk recorded, yet legacy")
	}
	os.Remove(d.BaseDisk())
	if in, _ := Inspect(d); !in.Legacy || in.BaseDisk != "" {
		t.Errorf("a shared clone and no base disk: legacy %v, base disk %q", in.Legacy, in.BaseDisk)
	}
}
