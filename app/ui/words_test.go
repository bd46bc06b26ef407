package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/workspace"
)

func TestSessionStatusPlainWords(t *testing.T) {
	code := func(c int) *int { return &c }
	tests := []struct {
		name          string
		s             store.Session
		state, detail string
		sentence      string
	}{
		{"cloning", store.Session{State: session.StateProvisioning, Reason: "receiving objects 40%"}, "cloning", "receiving objects 40%", "Cloning — receiving objects 40%"},
		{"booting", store.Session{State: session.StateBooting}, "starting", "", "Starting"},
		{"working", store.Session{State: session.StateRunning, Activity: session.ActivityWorking, Reason: "working"}, "working", "", "Working"},
		{"waiting", store.Session{State: session.StateRunning, Activity: session.ActivityWaiting, Reason: "waiting for your message"}, "waiting for you", "", "Waiting for you"},
		{"paused on a full disk", store.Session{State: session.StateRunning, Activity: session.ActivityPaused, Reason: "paused: the disk holding Sandbar's data is full (16 MB free)"}, "paused", "the disk holding Sandbar's data is full (16 MB free)", "Paused — the disk holding Sandbar's data is full (16 MB free)"},
		{"suspended by the person", store.Session{State: session.StateSuspended, Reason: session.ReasonSuspended}, "suspended", "", "Suspended"},
		{"suspended after a long wait", store.Session{State: session.StateSuspended, Reason: session.ReasonAutoSuspended(15 * time.Minute)}, "suspended", "after waiting 15 min for you", "Suspended — after waiting 15 min for you"},
		{"suspended for the host's sleep", store.Session{State: session.StateSuspended, Reason: session.ReasonSlept}, "suspended", "while the computer slept", "Suspended — while the computer slept"},
		{"waiting and idle", store.Session{State: session.StateRunning, Activity: session.ActivityWaiting, Reason: "idle for 5m0s"}, "waiting for you", "idle for 5m0s", "Waiting for you — idle for 5m0s"},
		{"stopping on its own", store.Session{State: session.StateStopping, Reason: "agent exited; saving its work and shutting the VM down"}, "stopping", "the agent ended; saving its work and shutting the VM down", "Stopping — the agent ended; saving its work and shutting the VM down"},
		{"stopped by the person (SIGTERM)", store.Session{State: session.StateStopped, Reason: session.ReasonStoppedByUser, ExitCode: code(143)}, "stopped by you", "", "Stopped by you"},
		{"stopped by quitting", store.Session{State: session.StateStopped, Reason: session.ReasonQuit, ExitCode: code(143)}, "stopped when Sandbar quit", "", "Stopped when Sandbar quit"},
		{"finished", store.Session{State: session.StateStopped, Reason: "agent finished", ExitCode: code(0)}, "finished", "", "Finished"},
		{"timed out", store.Session{State: session.StateStopped, Reason: "timed out after 1h0m0s", ExitCode: code(143)}, "stopped", "timed out after 1h0m0s", "Stopped — timed out after 1h0m0s"},
		{"failed with a code", store.Session{State: session.StateFailed, Reason: "agent exited with code 3", ExitCode: code(3)}, "failed", "the agent quit with error code 3", "Failed — the agent quit with error code 3"},
		{"killed", store.Session{State: session.StateFailed, Reason: "agent killed by SIGKILL (exit 137)", ExitCode: code(137)}, "failed", "the agent was killed (it may have run out of memory)", "Failed — the agent was killed (it may have run out of memory)"},
		{"command not found", store.Session{State: session.StateFailed, ExitCode: code(127)}, "failed", "the agent's command could not be run (not found or not executable; code 127)", "Failed — the agent's command could not be run (not found or not executable; code 127)"},
		{"failed to start", store.Session{State: session.StateFailed, Reason: "the VM did not start: KVM is busy"}, "failed", "the VM did not start: KVM is busy", "Failed — the VM did not start: KVM is busy"},
		{"stopped, work not saved", store.Session{State: session.StateStopped, Reason: session.ReasonNotSaved + "git in the VM failed: not a git repository", ExitCode: code(143)}, "stopped — work not saved", "git in the VM failed: not a git repository", "Stopped — work not saved: git in the VM failed: not a git repository"},
		{"interrupted", store.Session{State: session.StateInterrupted, Reason: "Sandbar went away while it ran"}, "interrupted", "Sandbar went away while it ran", "Interrupted — Sandbar went away while it ran"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state, detail := sessionStatus(tc.s)
			if state != tc.state || detail != tc.detail {
				t.Errorf("sessionStatus = %q, %q; want %q, %q", state, detail, tc.state, tc.detail)
			}
			if got := stateSentence(tc.s); got != tc.sentence {
				t.Errorf("stateSentence = %q, want %q", got, tc.sentence)
			}
			for _, jargon := range []string{"exit", "SIG", "code 0", "143"} {
				if strings.Contains(state+detail, jargon) {
					t.Errorf("%q / %q says %q", state, detail, jargon)
				}
			}
		})
	}
}

// TestChangesListPlainWords: the Changes tab names each kind of change
// in words ("untracked", not git's "?"; "added", not "A").
func TestChangesListPlainWords(t *testing.T) {
	a := test.NewTempApp(t)
	a.Settings().SetTheme(Theme())
	c := newChangesPanel(&sessionWindow{})
	w := a.NewWindow("changes")
	defer w.Close()
	w.SetContent(c.content)
	w.Resize(fyne.NewSize(900, 500))
	c.set(workspace.Changes{Files: []workspace.FileChange{
		{Path: "new.go", Status: "added"},
		{Path: "main.go", Status: "modified"},
		{Path: "old.go", Status: "deleted"},
		{Path: "b.go", From: "a.go", Status: "renamed"},
		{Path: "notes.txt", Status: "untracked"},
		{Path: "x.go", Status: "unmerged"},
	}, DiffStat: " 3 files changed, 10 insertions(+), 1 deletion(-)"})
	got := texts(w.Canvas().Content())
	for _, want := range []string{"added", "modified", "deleted", "renamed", "untracked", "conflict", "b.go (from a.go)",
		"6 files changed · 10 lines added and 1 removed in files the repository had"} {
		if !slices.Contains(got, want) {
			t.Errorf("the Changes tab does not show %q; it shows %q", want, got)
		}
	}
	for _, letter := range []string{"A", "M", "D", "R", "?", "U"} {
		if slices.Contains(got, letter) {
			t.Errorf("the Changes tab shows git's letter %q: %q", letter, got)
		}
	}
}

func TestExecOutcomeWords(t *testing.T) {
	if got := execOutcome(session.ExecResult{Code: 0}, nil, 1500000000); got != "Done in 1.5s." {
		t.Errorf("a command that succeeded: %q", got)
	}
	if got := execOutcome(session.ExecResult{Code: 2}, nil, 1500000000); got != "Failed after 1.5s (exit code 2)." {
		t.Errorf("a command that failed: %q", got)
	}
}
