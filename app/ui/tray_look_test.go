package ui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

func TestTrayTooltipText(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sess := func(id string, state store.State, activity string) store.Session {
		return store.Session{ID: id, ProjectID: 1, Branch: "sandbar/" + id, State: state, Activity: activity, Started: now.Add(-time.Minute)}
	}
	tests := []struct {
		sessions  []store.Session
		attention map[string]notice
		want      string
	}{
		{nil, nil, "Sandbar — no sessions running"},
		{[]store.Session{sess("a", session.StateStopped, "")}, nil, "Sandbar — no sessions running"},
		{[]store.Session{
			sess("a", session.StateRunning, session.ActivityWorking),
			sess("b", session.StateBooting, ""),
			sess("c", session.StateRunning, session.ActivityWaiting),
		}, map[string]notice{"c": noticeWaiting}, "Sandbar — 2 running, 1 waiting for you"},
		{[]store.Session{
			sess("a", session.StateStopped, ""),
			sess("b", session.StateFailed, ""),
			sess("c", session.StateStopped, ""),
		}, map[string]notice{"a": noticeFinished, "b": noticeFailed}, "Sandbar — 1 finished, 1 failed"},
	}
	for _, tc := range tests {
		m := buildTrayModel(tc.sessions, []store.Project{{ID: 1, Name: "web"}}, tc.attention, now)
		if m.Tooltip != tc.want {
			t.Errorf("tooltip %q, want %q", m.Tooltip, tc.want)
		}
	}
}

// TestTrayMergedSessionTooltip, against a real Manager: the tray's
// tooltip sums the sessions up as they change, and a finished session
// merged in its window is no longer offered a Merge in the tray (a live
// one still is).
func TestTrayMergedSessionTooltip(t *testing.T) {
	h := newAppHarness(t)
	e, u := h.env, h.u
	repo := e.Repo(t, "web app")
	ft := &fakeTray{}
	var (
		tipMu sync.Mutex
		tips  []string
	)
	tip := func() string {
		tipMu.Lock()
		defer tipMu.Unlock()
		if len(tips) == 0 {
			return ""
		}
		return tips[len(tips)-1]
	}
	tray := u.StartTray(ft, TrayOptions{Tick: time.Hour, Tooltip: func(s string) {
		tipMu.Lock()
		tips = append(tips, s)
		tipMu.Unlock()
	}})
	defer tray.Stop()
	waitTip := func(want string) {
		t.Helper()
		h.q.WaitFor(t, 30*time.Second, "the tooltip "+want, func() bool { return tip() == want })
	}
	waitTip("Sandbar — no sessions running")
	ctx := context.Background()

	long, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	waitTip("Sandbar — 1 running")
	// A session with work to merge (one with none offers no merge).
	work := `echo hi > added.txt && git add added.txt && git -c user.name=A -c user.email=a@example.com commit -qm add`
	done, err := e.Manager.Start(ctx, session.Options{Repo: repo, Agent: sessiontest.Shell(work), Prompt: "Add a file"})
	if err != nil {
		t.Fatal(err)
	}
	waitTray(t, h, ft, "the finished session, offered a branch", func(m *fyne.Menu, _ fyne.Resource) bool {
		it := trayItem(m, "Add a file · finished · ")
		return it != nil && slices.Equal(trayLabels(it.ChildMenu), []string{"web app · " + done.Branch, "Open", "Stop", "Create branch " + done.Branch})
	})
	waitTip("Sandbar — 1 running, 1 finished")

	w := u.showSession(done.ID)
	if w == nil {
		t.Fatal("no session window")
	}
	h.q.WaitFor(t, 30*time.Second, "the window's header to say Finished", func() bool { return w.state.Text == "Finished" })
	test.Tap(w.branch)
	h.q.WaitFor(t, 30*time.Second, "the merge's result", func() bool { return strings.HasPrefix(w.notice.text(), "Branch "+done.Branch+" created") })
	commit := sessiontest.Git(t, repo, "rev-parse", "refs/heads/"+done.Branch)
	tray.poke()
	m := waitTray(t, h, ft, "the merged session without a merge action", func(m *fyne.Menu, _ fyne.Resource) bool {
		it := trayItem(m, "Add a file · ")
		return it != nil && slices.Equal(trayLabels(it.ChildMenu), []string{"web app · " + done.Branch, "Open", "Stop", "Branch " + done.Branch + " created (" + commit[:7] + ")"})
	})
	it := trayItem(m, "Add a file · ")
	if merged := it.ChildMenu.Items[len(it.ChildMenu.Items)-1]; !merged.Disabled || merged.Action != nil {
		t.Error("the Branch … created line is an action")
	}
	if got := trayLabels(trayItem(m, "sleep 60 · ").ChildMenu); !slices.Equal(got, []string{"web app · " + long.Branch, "Open", "Stop", "Create branch " + long.Branch}) {
		t.Errorf("the running session's submenu %q, want Merge still offered", got)
	}
}
