package ui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/env/prepared"
	"sandbar/app/store"
)

// devcontainerProject adds a project whose repository has a
// devcontainer.json of text (not trusted yet).
func (h *appHarness) devcontainerProject(t *testing.T, name, text string) store.Project {
	t.Helper()
	p := h.addProject(t, name)
	f := filepath.Join(p.Path, ".devcontainer", "devcontainer.json")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// trustAll trusts what the project's repository settings ask for, as
// the Trust tab's button does.
func (h *appHarness) trustAll(t *testing.T, p store.Project) {
	t.Helper()
	ctx := context.Background()
	rev, err := h.env.Manager.RepoTrust(ctx, p.Path)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, pr := range rev.Pending() {
		hashes[pr.Kind] = pr.Hash
	}
	if err := h.env.Manager.DecideRepoTrust(ctx, p.Path, store.TrustTrusted, hashes); err != nil {
		t.Fatal(err)
	}
}

// preparedStore is the harness's store of prepared environments, where
// the tests put preparations as the engine's preparing machine leaves
// them (no VM is booted here).
func (h *appHarness) preparedStore() *prepared.Store {
	return &prepared.Store{Dir: h.env.Paths.PreparedEnvs()}
}

// envDevcontainer asks for Sandbar's own image, a feature and creation
// commands; the command's text carries a terminal escape, which the
// window must show as visible characters.
const envDevcontainer = `{
  // JSONC: a comment, and a trailing comma
  "features": {"ghcr.io/devcontainers/features/go:1": {"version": "1.22"}},
  "postCreateCommand": "go mod download \u001b]0;pwned\u0007",
  "postStartCommand": ["make", "serve"],
}`

// TestProjectEnvironmentTab: the Environment tab of Project Settings
// shows the repository's devcontainer.json and what it asks for, says
// it is not used until trusted (with the way to the Trust tab), then
// the prepared environment's states as the engine leaves them on disk:
// not prepared, preparing (a bar and the live log, following the file
// as it grows), failed (why, and that none is ready) and ready (when,
// size, commit). The sudo setting reaches the store.
func TestProjectEnvironmentTab(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	p := h.devcontainerProject(t, "envtab", envDevcontainer)
	w := h.projectSettings(t, p)
	h.q.WaitFor(t, 5*time.Second, "the Environment tab", func() bool { return w.env != nil && w.env.loaded && w.env.sudoKnown })
	selectTab(t, w.tabs, tabEnvironment)
	e := w.env
	if !strings.Contains(e.heading.Text, "Environment: Sandbar's own image: the repository's .devcontainer/devcontainer.json is not trusted yet") {
		t.Errorf("heading before trust: %q", e.heading.Text)
	}
	for _, want := range []string{
		"File: .devcontainer/devcontainer.json",
		"Image: Sandbar's own",
		"Features: ghcr.io/devcontainers/features/go:1",
		"postCreateCommand (once, in the prepared environment): /bin/sh -c go mod download \\x1b]0;pwned\\x07",
		"postStartCommand (every start, a restart too): make serve",
		"sessions start on Sandbar's own image until you trust it",
		"Nothing is prepared until you trust the file.",
	} {
		if !shows(w.win, want) {
			t.Errorf("the tab does not show %q: %q", want, texts(w.win.Canvas().Content()))
		}
	}
	if slices.ContainsFunc(texts(w.win.Canvas().Content()), func(s string) bool { return strings.ContainsAny(s, "\x1b\x07") }) {
		t.Error("the tab draws the repository's control characters")
	}
	if !e.review.Visible() || !e.rebuild.Disabled() {
		t.Errorf("untrusted: Review shown %v, Rebuild disabled %v", e.review.Visible(), e.rebuild.Disabled())
	}
	test.Tap(e.review)
	if sel := w.tabs.Selected(); sel == nil || sel.Text != tabTrust {
		t.Errorf("Review opened %v, not the Trust tab", sel)
	}
	selectTab(t, w.tabs, tabEnvironment)

	// Trusted: nothing prepared yet.
	h.trustAll(t, p)
	e.watch.Kick()
	h.q.WaitFor(t, 5*time.Second, "the trusted file's state", func() bool {
		return strings.HasPrefix(e.state.Text, "Not prepared yet")
	})
	if !strings.Contains(e.heading.Text, ".devcontainer/devcontainer.json — not prepared yet") || e.review.Visible() || e.rebuild.Disabled() || !e.showLog.Disabled() {
		t.Errorf("trusted: heading %q, Review shown %v, Rebuild disabled %v, Show log disabled %v", e.heading.Text, e.review.Visible(), e.rebuild.Disabled(), e.showLog.Disabled())
	}

	// Preparing: the bar, the step, and the log followed as it grows.
	name := strconv.FormatInt(p.ID, 10)
	key := strings.Repeat("a", 64)
	b, err := h.preparedStore().Begin(name, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetProgress(prepared.Progress{Commit: "0123456789abcdef", Step: "running postCreateCommand", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(b.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	logf.WriteString("== running postCreateCommand\ngo: downloading \x1b[31mexample.com/dep v1.0.0\n" + strings.Repeat("x", 200<<10) + "\n")
	e.watch.Kick()
	h.q.WaitFor(t, 5*time.Second, "the preparation shown with its log", func() bool {
		return strings.HasPrefix(e.state.Text, "Preparing since") && e.logView.Len() >= 3
	})
	if !strings.Contains(e.state.Text, "on commit 0123456: running postCreateCommand…") || !e.bar.Visible() || !e.rebuild.Disabled() || e.showLog.Text != "Hide log" {
		t.Errorf("preparing: state %q, bar %v, Rebuild disabled %v, log button %q", e.state.Text, e.bar.Visible(), e.rebuild.Disabled(), e.showLog.Text)
	}
	if !strings.Contains(e.heading.Text, "preparing… (running postCreateCommand)") {
		t.Errorf("heading while preparing: %q", e.heading.Text)
	}
	lines := e.logView.Lines()
	if lines[0] != "== running postCreateCommand" || len(lines[2]) > envLogLineMax+8 {
		t.Errorf("the log shown: first %q, a 200 KiB line kept as %d bytes", lines[0], len(lines[2]))
	}
	logf.WriteString("ok  \texample.com/x\n")
	h.q.WaitFor(t, 5*time.Second, "a line added to the log shown", func() bool {
		l := e.logView.Lines()
		return len(l) > 0 && l[len(l)-1] == "ok  \texample.com/x"
	})

	// Failed, none ready: why, and that sessions fail until it is fixed.
	if _, err := b.Fail(prepared.Env{Commit: "0123456789abcdef"}, errors.New("postCreateCommand exited 3\nlast lines:\ngo: module not found")); err != nil {
		t.Fatal(err)
	}
	e.watch.Kick()
	h.q.WaitFor(t, 5*time.Second, "the failure shown", func() bool { return strings.HasPrefix(e.state.Text, "Failed on commit 0123456") })
	if !e.problem.Visible() || e.problem.Text != "postCreateCommand exited 3\nlast lines:\ngo: module not found" || e.bar.Visible() || e.rebuild.Disabled() {
		t.Errorf("failed: problem %q (shown %v), bar %v, Rebuild disabled %v", e.problem.Text, e.problem.Visible(), e.bar.Visible(), e.rebuild.Disabled())
	}
	if !strings.Contains(e.serving.Text, "None is ready") || !strings.Contains(e.heading.Text, "failed: postCreateCommand exited 3 — none is ready") {
		t.Errorf("failed: serving %q, heading %q", e.serving.Text, e.heading.Text)
	}
	// The log followed is the failed preparation's, read again where
	// its folder moved.
	h.q.WaitFor(t, 5*time.Second, "the failed preparation's log", func() bool {
		l := e.logView.Lines()
		return len(l) == 4 && l[len(l)-1] == "ok  \texample.com/x"
	})

	// Ready: made when, on which commit, its size.
	key2 := strings.Repeat("b", 64)
	b2, err := h.preparedStore().Begin(name, key2)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b2.Disk(), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b2.LogPath(), []byte("== ready\n"), 0o600)
	if _, err := b2.Finish(prepared.Env{Commit: "fedcba9876543210", Took: 95 * time.Second, SetupTook: 80 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.watch.Kick()
	h.q.WaitFor(t, 5*time.Second, "the ready environment shown", func() bool { return strings.HasPrefix(e.state.Text, "Ready: prepared just now") })
	if !strings.Contains(e.state.Text, "on commit fedcba9, 3.0 MiB on disk, 1m35s to prepare (1m20s of it the file's own commands)") {
		t.Errorf("ready: %q", e.state.Text)
	}
	if !strings.Contains(e.heading.Text, "— ready (prepared just now)") || e.serving.Visible() || e.problem.Visible() {
		t.Errorf("ready: heading %q, serving shown %v, problem shown %v", e.heading.Text, e.serving.Visible(), e.problem.Visible())
	}
	h.q.WaitFor(t, 5*time.Second, "the ready one's log", func() bool {
		l := e.logView.Lines()
		return len(l) == 1 && l[0] == "== ready"
	})
	test.Tap(e.showLog)
	if e.showLog.Text != "Show log" || e.logStop != nil {
		t.Errorf("Hide log left the log followed (%q)", e.showLog.Text)
	}

	// Sudo: on by default; unticked, the project's sessions lose it.
	if !e.sudo.Checked {
		t.Error("sudo is not on by default")
	}
	test.Tap(e.sudo)
	h.q.WaitFor(t, 5*time.Second, "the sudo setting saved", func() bool { return strings.HasPrefix(e.status.Text, "Saved") })
	if on, err := h.env.Manager.ProjectSudo(ctx, p.ID); err != nil || on {
		t.Errorf("after unticking, ProjectSudo = %v, %v", on, err)
	}
	test.Tap(e.sudo)
	h.q.WaitFor(t, 5*time.Second, "sudo saved on", func() bool { return strings.Contains(e.status.Text, "may use sudo") })
	if on, _ := h.env.Manager.ProjectSudo(ctx, p.ID); !on {
		t.Error("ticked again, sudo is still off")
	}
}

// TestProjectEnvironmentHoldsItsShape: at 1280×800, a hostile
// devcontainer.json (a command of 10,000 characters, 300 features, a
// note as long) and a failed preparation whose error and log hold lines
// as long leave the Environment tab's window its size, with Rebuild and
// Show log inside it; what is long is clipped or wrapped, and the lists
// are cut with a count.
func TestProjectEnvironmentHoldsItsShape(t *testing.T) {
	h := newAppHarness(t)
	long := strings.Repeat("x", 10000)
	var feats []string
	for i := range 300 {
		feats = append(feats, `"127.0.0.1:1/f`+strconv.Itoa(i)+`/`+strings.Repeat("y", 200)+`:1": {}`)
	}
	p := h.devcontainerProject(t, "shape", `{"features": {`+strings.Join(feats, ",")+`}, "postCreateCommand": "`+long+`", "`+long+`": 1}`)
	h.trustAll(t, p)
	b, err := h.preparedStore().Begin(strconv.FormatInt(p.ID, 10), strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b.LogPath(), []byte(strings.Repeat(long+"\n", 50)), 0o600)
	if _, err := b.Fail(prepared.Env{Commit: "0123456789"}, errors.New(long+"\n"+strings.Repeat("tail "+long+"\n", 100))); err != nil {
		t.Fatal(err)
	}
	w := h.projectSettings(t, p)
	w.win.Resize(screen)
	h.q.WaitFor(t, 5*time.Second, "the Environment tab", func() bool { return w.env != nil && w.env.loaded })
	selectTab(t, w.tabs, tabEnvironment)
	e := w.env
	h.q.WaitFor(t, 5*time.Second, "the failure shown", func() bool { return strings.HasPrefix(e.state.Text, "Failed on commit") })
	holdsShape(t, w.win, screen, e.rebuild, e.showLog)
	test.Tap(e.showLog)
	h.q.WaitFor(t, 5*time.Second, "the log shown", func() bool { return e.logView.Len() == 50 })
	h.q.Drain()
	holdsShape(t, w.win, screen, e.rebuild, e.showLog)
	if !shows(w.win, "and 260 more") || !shows(w.win, "… and more commands") && !shows(w.win, "postCreateCommand") {
		t.Errorf("the features are not cut with a count: %q", texts(w.win.Canvas().Content()))
	}
	if n := strings.Count(e.problem.Text, "\n"); n > 21 {
		t.Errorf("the error shows %d lines, more than a screenful", n)
	}
	for _, s := range texts(w.win.Canvas().Content()) {
		if len([]rune(s)) > 30*envTextMax {
			t.Errorf("a label holds %d characters: %q…", len([]rune(s)), s[:80])
		}
	}
}

// TestProjectEnvironmentRebuild: Rebuild asks the real session manager
// to prepare the environment; the tab follows the preparation to its
// end (ready or failed, as the machine leaves it) and shows its log,
// the manager's own.
func TestProjectEnvironmentRebuild(t *testing.T) {
	h := newAppHarness(t)
	p := h.devcontainerProject(t, "rebuilt", `{"postCreateCommand": "echo made > /tmp/made"}`)
	h.trustAll(t, p)
	w := h.projectSettings(t, p)
	h.q.WaitFor(t, 5*time.Second, "the Environment tab", func() bool { return w.env != nil && w.env.loaded })
	selectTab(t, w.tabs, tabEnvironment)
	e := w.env
	if e.rebuild.Disabled() {
		t.Fatalf("Rebuild is disabled: %q", e.state.Text)
	}
	test.Tap(e.rebuild)
	h.q.WaitFor(t, 10*time.Second, "the preparation started", func() bool {
		return strings.HasPrefix(e.status.Text, "Preparing") || strings.HasPrefix(e.status.Text, "Ready")
	})
	h.q.WaitFor(t, 60*time.Second, "the preparation's end", func() bool {
		return strings.HasPrefix(e.state.Text, "Ready") || strings.HasPrefix(e.state.Text, "Failed")
	})
	h.q.WaitFor(t, 5*time.Second, "its log", func() bool { return logHas(e.logView, "preparing the environment of .devcontainer/devcontainer.json") })
	t.Logf("the preparation ended: %s %s", e.state.Text, e.problem.Text)
}
