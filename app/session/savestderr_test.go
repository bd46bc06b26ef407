package session

import (
	"strings"
	"testing"
)

// TestSaveStderr: every write of the save script's stderr is progress;
// its progress lines and git's (\r-ended) are the last step, not text
// kept for a person, which stays bounded, and a line split across
// writes is whole.
func TestSaveStderr(t *testing.T) {
	progress := 0
	w := &saveStderr{kept: boundedBuffer{max: 4096}, progress: func() { progress++ }}
	for _, chunk := range []string{
		"sandbar-save: progress listing changes\n",
		"sandbar-save: left out of the snapshot, over 64 MiB: disk.img\n",
		"sandbar-save: progress added 2000 paths\nsandbar-save: progress add",
		"ed 4000 paths\n",
		"Counting objects:  50% (1/2)\rCounting objects: 100% (2/2)\rCounting objects: 100% (2/2), done.\n",
		"fatal: something git said\n",
	} {
		w.Write([]byte(chunk))
	}
	if progress != 6 {
		t.Errorf("%d writes counted as progress, want 6", progress)
	}
	if got, want := w.String(), "sandbar-save: left out of the snapshot, over 64 MiB: disk.img\nfatal: something git said\n"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	w.Write([]byte("sandbar-save: progress writing the snapshot\n"))
	if got := w.lastStep(); got != `"writing the snapshot"` {
		t.Errorf("last step %s", got)
	}
	w.Write([]byte("Writing objects:  10% (1/10)\r"))
	if got := w.lastStep(); got != `"git: Writing objects:  10% (1/10)"` {
		t.Errorf("last step %s", got)
	}

	// A flood without line ends, and of lines, stays bounded.
	w.Write([]byte(strings.Repeat("x", 1<<20)))
	for range 1000 {
		w.Write([]byte(strings.Repeat("y", 100) + "\n"))
	}
	if n := len(w.String()); n > 4096+maxStderrLine {
		t.Errorf("kept %d bytes", n)
	}
}

// TestUnsavedReason: a stop whose save failed says so, with the cause as
// it was found; one that saved keeps its reason.
func TestUnsavedReason(t *testing.T) {
	if got := unsavedReason(ReasonStoppedByUser, nil); got != ReasonStoppedByUser {
		t.Errorf("saved: %q", got)
	}
	got := unsavedReason(ReasonStoppedByUser, errString("save the session's work: git in the VM exited 128: fatal: not a git repository"))
	if got != "work not saved: git in the VM exited 128: fatal: not a git repository" {
		t.Errorf("not saved: %q", got)
	}
	if why, ok := NotSaved(got); !ok || !strings.HasPrefix(why, "git in the VM") {
		t.Errorf("NotSaved(%q) = %q, %v", got, why, ok)
	}
	if _, ok := NotSaved(ReasonStoppedByUser); ok {
		t.Error("a saved stop reads as not saved")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
