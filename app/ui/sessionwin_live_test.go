package ui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"sandbar/app/session"
)

// TestSessionWindowLiveOutput: while a tool of the agent's runs (its
// output on a file, as Claude Code's Bash tool has it), the Log tab's
// live area shows its lines as they are written and its elapsed time,
// with the escape sequences it printed taken out; once it ends the
// area goes.
func TestSessionWindowLiveOutput(t *testing.T) {
	h := newSWHarness(t)
	repo := h.env.Repo(t, "live")
	out := t.TempDir() + "/tool.output"
	// The tool writes three lines, then waits for the test's word (a
	// file) before its last: what is checked while it runs does not
	// race the machine's load.
	release := t.TempDir() + "/release"
	agent := `echo ready; read go; sh -c 'for i in 1 2 3; do printf "\033[31mlive %s\033[0m\n" $i; done; while [ ! -e ` + release + ` ]; do sleep 0.1; done; printf "live 8\n"' > ` + out + `; read x`
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512,
		Agent: session.AgentSpec{Command: "sh", Args: []string{"-c", agent}}})
	if err != nil {
		t.Fatal(err)
	}
	w := h.open(t, s.ID)
	w.tabs.SelectIndex(1)
	lt := w.logTab
	// The tool runs once the window follows the session.
	h.q.WaitFor(t, 30*time.Second, "the agent ready", func() bool { return logHas(lt.raw, "ready") })
	if err := h.env.Manager.Chat(context.Background(), s.ID, "go"); err != nil {
		t.Fatal(err)
	}
	var seen string
	h.q.WaitFor(t, 60*time.Second, "the tool's lines in the live area while it runs", func() bool {
		seen = lt.liveArea.Text
		return lt.liveArea.Visible() && strings.Contains(seen, "│ live 2") && !strings.Contains(seen, "live 8")
	})
	if !strings.Contains(seen, "⋯ running · ") || !strings.Contains(seen, " s\n") {
		t.Errorf("the live area shows no elapsed time:\n%s", seen)
	}
	if strings.Contains(seen, "\x1b") || strings.Contains(seen, "[31m") {
		t.Errorf("the live area shows the tool's escape sequences:\n%q", seen)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 60*time.Second, "the live area gone once the tool ended", func() bool {
		return !lt.liveArea.Visible()
	})
}
