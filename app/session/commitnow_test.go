package session

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandbar/app/store"
)

// TestCommitNow: a running session's uncommitted work is committed on
// its branch with the person's message, said to be mid-turn while the
// agent works, and the clone takes the commit; refused in words while
// the disk is full, for a NUL in the message, with nothing to commit,
// and once stopped.
func TestCommitNow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.st.SetSetting(ctx, store.SettingDiskFloorMiB, "1"); err != nil {
		t.Fatal(err)
	}
	s, err := f.m.Start(ctx, Options{Repo: f.repo, Agent: AgentSpec{Command: "sh", Args: []string{"-c", "echo wip > wip.txt; echo up; sleep 600"}}, MemoryMiB: 512})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, s.ID, "up")
	f.waitState(t, s.ID, 10*time.Second, "working", func(s store.Session) bool { return s.Activity == ActivityWorking })

	if _, err := f.m.Commit(ctx, s.ID, "bad\x00message"); !errors.Is(err, ErrBadOptions) {
		t.Errorf("a NUL in the message: %v, want ErrBadOptions", err)
	}
	res, err := f.m.Commit(ctx, s.ID, "  Save the draft\r\n\r\nBody line.  ")
	if err != nil {
		t.Fatal(err)
	}
	if res.Subject != "Save the draft" || !res.Working || res.NotInClone != "" || len(res.Files) != 1 || res.Files[0] != "wip.txt" || res.Branch != s.Branch {
		t.Errorf("Commit = %+v", res)
	}
	var out bytes.Buffer
	if r, err := f.m.Exec(ctx, s.ID, ExecRequest{Argv: []string{"sh", "-c", "git rev-parse HEAD; git log -1 --format=%B; git status --porcelain"}}, &out, &out); err != nil || r.Code != 0 {
		t.Fatalf("git in the clone: %v %+v %s", err, r, out.String())
	}
	if got := out.String(); !strings.HasPrefix(got, res.Commit+"\nSave the draft\n\nBody line.\n\nSandbar-Session: "+s.ID+"\n") || strings.Contains(got, "wip.txt") {
		t.Errorf("the clone after the commit:\n%s", got)
	}
	if _, err := f.m.Commit(ctx, s.ID, ""); !errors.Is(err, ErrNothingToCommit) || !strings.Contains(err.Error(), "nothing to commit: the work is already saved at "+res.Commit[:7]) {
		t.Errorf("commit again: %v, want nothing to commit at %s", err, res.Commit[:7])
	}
	// The log's lines are stored in batches: wait for this one.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lines, _ := f.m.Logs(ctx, s.ID, 0, 0); hasLogLine(lines, "committed the session's work (1 file) on "+s.Branch) {
			break
		}
		if time.Now().After(deadline) {
			t.Error("the log does not say what was committed")
			break
		}
	}

	if err := f.st.SetSetting(ctx, store.SettingDiskFloorMiB, "100000000"); err != nil {
		t.Fatal(err)
	}
	f.hv.Booted()[0].PauseOnFullDisk()
	f.waitState(t, s.ID, 10*time.Second, "paused", func(s store.Session) bool { return s.Activity == ActivityPaused })
	if _, err := f.m.Commit(ctx, s.ID, ""); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "sandbar resume") {
		t.Errorf("commit while paused on a full disk: %v, want ErrDiskFull saying how to resume", err)
	}
	f.st.SetSetting(ctx, store.SettingDiskFloorMiB, "1")
	if _, err := f.m.Resume(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Commit(ctx, s.ID, ""); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "not running") || !strings.Contains(err.Error(), "sandbar merge") {
		t.Errorf("commit of a stopped session: %v", err)
	}
}

func hasLogLine(lines []store.LogLine, s string) bool {
	for _, l := range lines {
		if strings.Contains(l.Text, s) {
			return true
		}
	}
	return false
}
