package ui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/net/policy"
	"sandbar/app/session"
	"sandbar/app/store"
	sbwidget "sandbar/app/ui/widget"
)

// TestTrayHealthLines: a session whose agent retries its API, and one
// that failed, say why in their tray lines.
func TestTrayHealthLines(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ss := []store.Session{
		{ID: "a", ProjectID: 1, Branch: "sandbar/a", State: session.StateRunning, Activity: session.ActivityRetrying,
			Reason: "Can't reach the Anthropic API — retry 3/10", Started: now.Add(-5 * time.Minute)},
		{ID: "b", ProjectID: 1, Branch: "sandbar/b", State: session.StateFailed,
			Reason: "The API key was refused — set it in Settings", Started: now.Add(-9 * time.Minute), Ended: now.Add(-8 * time.Minute)},
	}
	m := buildTrayModel(ss, []store.Project{{ID: 1, Name: "web"}}, map[string]notice{"b": noticeFailed}, now)
	var labels []string
	for _, s := range m.Sessions {
		labels = append(labels, s.Label)
	}
	want := []string{"Session a · can't reach the Anthropic API — retry 3/10 · 5m", "Session b · failed: the API key was refused — set it in Settings · 1m"}
	if !slices.Equal(labels, want) {
		t.Errorf("tray lines %q, want %q", labels, want)
	}
}

// TestSessionWindowAgentHealth: a Claude Code session whose API refuses
// the key shows each retry in its header and transcript in words, then
// "Failed" with what to do, and the transcript ends with the failed turn.
func TestSessionWindowAgentHealth(t *testing.T) {
	h := newSWHarness(t)
	lines, err := os.ReadFile(filepath.Join("..", "session", "testdata", "claude", "api-401.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for d := bin; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the agent may run as another user
	}
	os.WriteFile(filepath.Join(bin, "lines"), lines, 0o644)
	// The first line (retry 1/2) holds until the test has seen it in the
	// header: a header that showed it for a moment only could be missed.
	gate := filepath.Join(bin, "seen-retry-1")
	script := "#!/bin/sh\nwhile read msg; do n=0; while IFS= read -r l; do echo \"$l\"; n=$((n+1))\n" +
		"  while [ $n = 1 ] && [ ! -e " + gate + " ]; do sleep 0.1; done\n" +
		"done < " + filepath.Join(bin, "lines") + "; done\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env.Secrets["PATH"] = bin + ":/usr/local/bin:/usr/bin:/bin"
	repo := h.env.Repo(t, "health")
	h.env.Give(t, repo, "PATH")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	h.q.WaitFor(t, 30*time.Second, "the header saying the key was refused, retry 1/2", func() bool {
		return w.state.Text == "The API key was refused — retry 1/2"
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 30*time.Second, "the header saying the session failed", func() bool {
		return w.state.Text == "Failed — The API key was refused — set it in Settings"
	})
	kinds := w.transcript.Kinds()
	var retries []string
	for i, k := range kinds {
		if k == sbwidget.EntryRetry {
			retries = append(retries, w.transcript.RowText(i))
		}
	}
	if want := []string{"Retrying: The API key was refused — retry 1/2", "Retrying: The API key was refused — retry 2/2"}; !slices.Equal(retries, want) {
		t.Errorf("retry rows %q, want %q", retries, want)
	}
	last := len(kinds) - 1
	if kinds[last] != sbwidget.EntryResult || w.transcript.RowText(last) != "Turn failed: The API key was refused — set it in Settings" {
		t.Errorf("the last row is %s %q", kinds[last], w.transcript.RowText(last))
	}
	for i := range kinds {
		if strings.Contains(w.transcript.RowText(i), `{"`) {
			t.Errorf("row %d is raw JSON: %q", i, w.transcript.RowText(i))
		}
	}
}

// TestNewSessionOffersTheNetworkForClaude: Claude Code with the network
// off is refused with words that say so and a button that turns the
// network on and starts; with a mode the person chose and a rule that
// denies the API, the words name the rule and no button is offered.
func TestNewSessionOffersTheNetworkForClaude(t *testing.T) {
	h := newAppHarness(t)
	p := h.addProject(t, "no api")
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	w := h.newSession(t, p.ID)
	w.agent.SetSelected(agentClaude)
	w.memory.SetSelected("1 GiB")
	w.network.SetSelected(modeName(policy.ModeOff))
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the refusal shown", func() bool {
		return !w.starting && strings.Contains(w.status.Text, "Claude Code could not reach the Anthropic API: the session's network is off")
	})
	if !w.apiFix.Visible() || w.apiFix.Text != apiFixLabel {
		t.Fatalf("no %q button beside %q", apiFixLabel, w.status.Text)
	}
	if ss, _ := h.env.Manager.List(context.Background()); len(ss) != 0 {
		t.Errorf("a refused start made sessions: %+v", ss)
	}
	test.Tap(w.apiFix)
	h.q.WaitFor(t, 10*time.Second, "the session started with the network on and opened", func() bool {
		return h.u.newSessWin == nil && len(opened) == 1
	})
	s, err := h.env.Manager.Get(context.Background(), opened[0])
	if err != nil {
		t.Fatal(err)
	}
	if !s.Limits.Network || s.Limits.NetMode != session.NetworkAllowlist || s.Agent.Kind != string(session.AgentClaude) {
		t.Errorf("started with %+v, agent %+v; want Claude Code with the network on (allowlist)", s.Limits, s.Agent)
	}

	// A rule that denies the API: a choice of mode cannot mend it.
	if err := h.env.Store.SetProjectSetting(context.Background(), p.ID, store.ProjectNetwork, "deny api.anthropic.com\n"); err != nil {
		t.Fatal(err)
	}
	w = h.newSession(t, p.ID)
	w.agent.SetSelected(agentClaude)
	w.memory.SetSelected("1 GiB")
	w.network.SetSelected(modeName(policy.ModeOpen))
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the refusal naming the rule", func() bool {
		return !w.starting && strings.Contains(w.status.Text, `denied by "deny api.anthropic.com" in the project's settings`)
	})
	if w.apiFix.Visible() {
		t.Errorf("%q offered where a rule keeps the API out", apiFixLabel)
	}
}
