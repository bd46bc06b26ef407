package session

import (
	"strings"
	"testing"
	"time"
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

// TestSaveStderrPhases: the save's progress lines split its time in the
// VM into phases for the log, and its count of paths is read; a line
// that names no phase, or a count that is not a number, changes nothing.
func TestSaveStderrPhases(t *testing.T) {
	w := &saveStderr{kept: boundedBuffer{max: 4096}, progress: func() {}, since: time.Now().Add(-time.Second)}
	for _, l := range []string{
		"sandbar-save: progress listing changes\n",
		"sandbar-save: progress adding 100000 paths\n",
		"sandbar-save: progress added a batch of paths (1 of 50)\n",
		"sandbar-save: progress something new\n",
		"sandbar-save: progress writing the snapshot\n",
		"sandbar-save: progress adding lots paths\n",
		"sandbar-save: progress packing the work for Sandbar\n",
		"Counting objects: 100% (2/2), done.\n",
	} {
		w.Write([]byte(l))
	}
	if w.paths != 100000 {
		t.Errorf("paths %d, want 100000", w.paths)
	}
	got := w.phases(time.Now())
	for _, p := range []string{"start ", "listing ", "adding ", "snapshot ", "packing "} {
		if !strings.Contains(got, p) {
			t.Errorf("phases %q lack %q", got, p)
		}
	}
	if strings.Contains(got, "keeping") || strings.Contains(got, "new") {
		t.Errorf("phases %q name one that did not happen", got)
	}
	if w.times[phaseStart] < time.Second {
		t.Errorf("the time before the first line is %s, want at least 1s", w.times[phaseStart])
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
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
