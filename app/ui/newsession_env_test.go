package ui

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/env/prepared"
)

// TestNewSessionEnvironment: New Session says where the chosen
// project's sessions run: Sandbar's own image for a repository without
// a devcontainer.json; for one with a trusted file, its prepared
// environment's state (failed, with the last good one serving); and
// "Use Sandbar's own image" starts that one session there: the
// project's file names a feature that cannot be fetched, which fails
// a start in the project's environment, not one in Sandbar's.
func TestNewSessionEnvironment(t *testing.T) {
	h := newAppHarness(t)
	plain := h.addProject(t, "plain")
	p := h.devcontainerProject(t, "devc", `{
  "features": {"127.0.0.1:1/sandbar-test/nowhere:1": {}},
  "postCreateCommand": "make deps",
}`)
	h.trustAll(t, p)
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }

	w := h.newSession(t, plain.ID)
	h.q.WaitFor(t, 5*time.Second, "the plain project's environment", func() bool {
		return w.envLine.Text == "Sandbar's own image (the repository has no devcontainer.json)"
	})
	if w.envDefault.Visible() {
		t.Error("the choice of Sandbar's own image is offered where it is the only one")
	}

	// A good one made on an older commit, then a failed remake.
	name := strconv.FormatInt(p.ID, 10)
	good, err := h.preparedStore().Begin(name, strings.Repeat("c", 64))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(good.Disk(), []byte("disk"), 0o600)
	if _, err := good.Finish(prepared.Env{Commit: "1111111111", Made: time.Now().Add(-2*time.Hour - time.Minute)}); err != nil {
		t.Fatal(err)
	}
	bad, err := h.preparedStore().Begin(name, strings.Repeat("d", 64))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Fail(prepared.Env{Commit: "2222222222"}, errors.New("postCreateCommand exited 2: make: *** No rule to make target 'deps'\nlog tail…")); err != nil {
		t.Fatal(err)
	}
	w.selectProject(p.ID)
	want := ".devcontainer/devcontainer.json — failed: postCreateCommand exited 2: make: *** No rule to make target 'deps' — sessions use the last good one (prepared 2 h ago)"
	h.q.WaitFor(t, 5*time.Second, "the failed preparation said", func() bool { return w.envLine.Text == want })
	if !w.envDefault.Visible() || w.envDefault.Checked {
		t.Errorf("the choice of Sandbar's own image: shown %v, ticked %v", w.envDefault.Visible(), w.envDefault.Checked)
	}

	// In the project's environment the start fails on the feature; in
	// Sandbar's own image it starts.
	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "echo in the default image")
	w.memory.SetSelected("1 GiB")
	test.Tap(w.start)
	h.q.WaitFor(t, 20*time.Second, "the project's environment refused", func() bool {
		return !w.starting && strings.Contains(w.status.Text, "127.0.0.1:1/sandbar-test/nowhere")
	})
	if len(opened) != 0 {
		t.Fatalf("a session started in the project's environment: %v", opened)
	}
	test.Tap(w.envDefault)
	test.Tap(w.start)
	h.q.WaitFor(t, 20*time.Second, "the session started in Sandbar's own image", func() bool {
		return h.u.newSessWin == nil && len(opened) == 1
	})
	if w.envWatch != nil {
		t.Error("the closed window still follows the environment")
	}
}

// TestNewSessionBrokenEnvironment: a trusted devcontainer.json that no
// longer parses refuses a start in the project's environment, naming
// the line; New Session says so and offers Sandbar's own image, which
// starts.
func TestNewSessionBrokenEnvironment(t *testing.T) {
	h := newAppHarness(t)
	p := h.devcontainerProject(t, "broken", `{"postStartCommand": "true"}`)
	h.trustAll(t, p)
	f := p.Path + "/.devcontainer/devcontainer.json"
	if err := os.WriteFile(f, []byte("{\n  \"postStartCommand\": \n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.trustAll(t, p)
	var opened []string
	h.u.OpenSession = func(id string) { opened = append(opened, id) }
	w := h.newSession(t, p.ID)
	h.q.WaitFor(t, 5*time.Second, "the broken file said", func() bool {
		return strings.HasPrefix(w.envLine.Text, "the repository's .devcontainer/devcontainer.json cannot be used: ")
	})
	if !strings.HasSuffix(w.envLine.Text, "— fix it, or start in Sandbar's own image") || !w.envDefault.Visible() {
		t.Errorf("line %q, Sandbar's own image offered %v", w.envLine.Text, w.envDefault.Visible())
	}
	w.agent.SetSelected(agentCustom)
	test.Type(w.command, "true")
	w.memory.SetSelected("1 GiB")
	test.Tap(w.start)
	h.q.WaitFor(t, 10*time.Second, "the start refused", func() bool { return !w.starting && strings.Contains(w.status.Text, "devcontainer.json") })
	test.Tap(w.envDefault)
	test.Tap(w.start)
	h.q.WaitFor(t, 20*time.Second, "the session started in Sandbar's own image", func() bool { return len(opened) == 1 })
}
