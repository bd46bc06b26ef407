//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"image"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"github.com/godbus/dbus/v5"

	"sandbar/app/config"
	"sandbar/app/session"
	"sandbar/app/store"
	"sandbar/app/ui"
	"sandbar/app/workspace"
	"sandbar/tests/anthropictest"
)

// Screenshots of the real app at 1280×800, as a person first meets it
// and then works in it, into artifacts/ (CI keeps the folder; the README
// shows a copy of main-window.png as assets/screenshots/sandbar-linux.png).
const (
	shotWelcome     = "artifacts/welcome.png"
	shotMain        = "artifacts/main-window.png"
	shotNewSession  = "artifacts/new-session.png"
	shotSessionDiff = "artifacts/session-diff.png"
)

// catalogueScript is committed in the test's repository; the agent of
// the session whose diff is shown runs it: 5,000 lines and one line of
// 10,000 characters, committed, so the diff is long both ways.
const catalogueScript = `awk 'BEGIN {
	print "sku,name,price"
	for (i = 1; i < 5000; i++) printf "sku-%05d,Widget %d,%d.99\n", i, i, (i * 37) % 500
	s = "notes"
	for (i = 0; i < 1000; i++) s = s ",long-note"
	print s
}' > catalogue.csv
git add catalogue.csv
git commit -qm 'Add the product catalogue fixtures'
`

// TestScreenshots runs the app on a fresh data directory under Xvfb at
// 1280×800 and photographs each window alone once it has settled:
// Welcome; the Sandbar window with five sessions in the states a person
// meets (working, waiting for you, finished, failed, stopped by you),
// titled from their prompts; New Session; and a session window on its
// Changes tab showing a 5,000-line diff with a 10,000-character line,
// which must leave the window's size as it was.
func TestScreenshots(t *testing.T) {
	needDesktop(t)
	if os.Getenv("SANDBAR_IMAGE_DIR") == "" {
		t.Skip("SANDBAR_IMAGE_DIR is not set: the sessions need the guest image (`make test` builds it)")
	}
	bin := sandbarBin(t)
	bus, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	tray := startWatcher(t, bus)
	notes := startNotifications(t, bus)
	// Claude Code, for the session that waits for you, talks to a
	// scripted Messages API that ends each turn with a question.
	api := anthropictest.Start(t, func(*anthropictest.Request) anthropictest.Reply {
		return anthropictest.Reply{Content: []anthropictest.Block{anthropictest.Text("Checkout posts the cart to /api/orders. Should I draw the sequence?")}}
	})

	x := startX(t, "1280x800")
	root := t.TempDir()
	env := append(desktopEnv(x, root), session.EnvAnthropicUpstream+"="+"http://"+net.JoinHostPort("127.0.0.1", api.Port))
	g := launch(t, bin, env, filepath.Join(root, "sandbar.log"))

	// 1. Welcome, on a fresh data directory.
	welcome := x.waitWindow(t, "^Welcome to Sandbar$", time.Minute)
	x.raise(t, welcome)
	x.shot(t, welcome, shotWelcome)
	var item trayItem
	select {
	case item = <-tray.items:
	case <-time.After(30 * time.Second):
		t.Fatal("no StatusNotifierItem registered with the watcher within 30 s")
	}

	// 2. A project and five sessions, titled from their prompts.
	repo := filepath.Join(root, "repos", "tinyshop")
	g.git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# tinyshop\n\nA small web shop.\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "make-catalogue.sh"), []byte(catalogueScript), 0o644)
	g.git(t, repo, "add", ".")
	g.git(t, repo, "commit", "-qm", "first")
	g.sandbar(t, "project", "add", repo)
	for _, s := range []struct{ name, value string }{
		{"ANTHROPIC_API_KEY", "sk-ant-test-screens-0123456789abcdef"},
		{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
	} {
		g.sandbarInput(t, s.value+"\n", "secrets", "set", s.name)
	}
	g.sandbar(t, "project", "secrets", repo, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")

	small := []string{"--repo", repo, "--cpus", "1", "--memory", "512", "--disk", "1"}
	start := func(prompt string, args ...string) string {
		out := g.sandbar(t, append(append([]string{"start", "--prompt", prompt}, small...), args...)...)
		f := strings.Fields(out)
		if len(f) < 2 || f[0] != "session" {
			t.Fatalf("start printed %q", out)
		}
		return f[1]
	}
	began := time.Now()
	waiting := g.sandbarStartClaude(t, repo, "Explain how checkout works")
	const diffTitle = "Add product catalogue fixtures"
	finished := start(diffTitle, "--agent", "sh make-catalogue.sh")
	failed := start("Upgrade the payments SDK to v3", "--agent", "echo 'go: module example.com/pay/v3: not found' >&2; exit 1")
	stopped := start("Speed up the product search", "--agent", "sleep 600")
	working := start("Add dark mode to the settings page", "--agent", "sleep 600")

	g.waitSession(t, stopped, "running", "")
	g.sandbar(t, "stop", stopped)
	for _, w := range []struct{ id, state, activity string }{
		{working, "running", "working"},
		{finished, "stopped", ""},
		{failed, "failed", ""},
		{stopped, "stopped", ""},
		{waiting, "running", "waiting"},
	} {
		g.waitSession(t, w.id, w.state, w.activity)
	}
	t.Logf("five sessions in their states %.1f s after the first start", time.Since(began).Seconds())

	// The tray lists each that runs or needs you by its title and its
	// state in words (one you stopped needs nothing).
	g.waitMenu(t, bus, item, "the sessions by title and state", func(m menuNode) bool {
		labels := "\n" + strings.Join(m.labels(), "\n")
		for _, want := range []string{
			"Add dark mode to the settings page · working",
			"Explain how checkout works · waiting for you",
			diffTitle + " · finished",
			"Upgrade the payments SDK to v3 · failed",
		} {
			if !strings.Contains(labels, "\n"+want) {
				return false
			}
		}
		return true
	})

	// 3. The Sandbar window with the five, at the size it opens at on
	// a fresh data directory.
	main := x.waitWindow(t, "^Sandbar$", 30*time.Second)
	x.raise(t, main)
	x.park(t)
	x.shot(t, main, shotMain)
	mainAt := x.geometry(t, main)
	if !mainAt.In(x.screen) {
		t.Errorf("the Sandbar window %v does not fit the %v screen", mainAt, x.screen)
	}
	checkMainRows(t, g, filepath.Join(root, "sandbar"), mainAt)

	// 4. New Session, from the tray.
	g.clickItem(t, bus, item, "New Session…")
	ns := x.waitWindow(t, "^New Session$", 30*time.Second)
	x.raise(t, ns)
	// The prompt has the keyboard as the window opens: what is typed
	// at once lands in it, and the picture changes.
	before := x.settled(t, ns)
	if _, err := x.xdotool("type", "--window", ns, "--delay", "30", "Fix the cart"); err != nil {
		t.Fatal(err)
	}
	after := x.shot(t, ns, shotNewSession)
	if n := differing(before, after, before.Bounds()); n < 100 {
		t.Errorf("typing into New Session as it opened changed %d pixels: the prompt does not have the keyboard", n)
	}
	x.closeWithKey(t, ns, "^New Session$", "Escape")

	// 5. The finished session's window, from its notification, on its
	// Changes tab with the long file's diff.
	notes.click(t, notes.wait(t, diffTitle+" — finished", time.Minute))
	sw := x.waitWindow(t, "^"+diffTitle+" — tinyshop$", 30*time.Second)
	x.raise(t, sw)
	win := x.geometry(t, sw)
	showDiff(t, x, sw, win)
	x.park(t)
	x.shot(t, sw, shotSessionDiff)
	if now := x.geometry(t, sw); now.Size() != win.Size() || !now.In(x.screen) {
		t.Errorf("the session window was %v and is %v after showing the diff: its content sized it", win, now)
	}
}

// showDiff clicks through session window id (at win) to the diff of
// its one changed file. The window opens on its Log tab (a custom agent
// keeps no transcript) and Changes is the tab after it; the file is the
// Changes list's first row, below a summary line that a click leaves
// alone. Each click is checked by what it changes on the screen.
func showDiff(t *testing.T, x *xserver, id string, win image.Rectangle) {
	t.Helper()
	x.park(t)
	img := x.settled(t, id)
	logTab, ok := tabUnderline(img)
	if !ok {
		t.Fatal("the session window shows no selected tab")
	}
	x.click(t, win.Min.Add(image.Pt(logTab.Max.X+30, logTab.Min.Y-15)))
	x.park(t)
	var changesTab image.Rectangle
	if !waitUntil(5*time.Second, 100*time.Millisecond, func() bool {
		img = x.settled(t, id)
		changesTab, ok = tabUnderline(img)
		return ok && changesTab.Min.X >= logTab.Max.X
	}) {
		t.Fatalf("a click right of the selected tab (%v) did not select the next one, Changes", logTab)
	}
	// Where the diff shows: right of the file list, below its title.
	pane := image.Rect(win.Dx()*45/100, changesTab.Max.Y+100, win.Dx()-20, win.Dy()-140)
	for y := changesTab.Max.Y + 12; y < changesTab.Max.Y+200; y += 12 {
		x.click(t, win.Min.Add(image.Pt(60, y)))
		if waitUntil(1500*time.Millisecond, 100*time.Millisecond, func() bool {
			f, err := grab(x.fb)
			return err == nil && differing(img, crop(f.img, win), pane) > 500
		}) {
			t.Logf("the diff showed on a click %d px below the tabs", y-changesTab.Max.Y)
			return
		}
	}
	t.Fatal("no click on the Changes tab's file list showed a diff")
}

// sandbarInput runs the CLI with stdin and returns its output.
func (g *gui) sandbarInput(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(g.bin, args...)
	cmd.Env = g.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbar %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// sandbarStartClaude starts a Claude Code session (the default agent)
// and returns its id. Claude Code is a Node program: it needs more
// memory than a shell.
func (g *gui) sandbarStartClaude(t *testing.T, repo, prompt string) string {
	t.Helper()
	out := g.sandbar(t, "start", "--repo", repo, "--prompt", prompt, "--cpus", "2", "--memory", "1024", "--disk", "1")
	f := strings.Fields(out)
	if len(f) < 2 || f[0] != "session" {
		t.Fatalf("start printed %q", out)
	}
	return f[1]
}

// waitSession waits until session id is in state (and activity, when
// not ""), as `sandbar ls` says, failing at once if it ends otherwise.
func (g *gui) waitSession(t *testing.T, id, state, activity string) {
	t.Helper()
	var s lsEntry
	ended := func(st string) bool { return st == "stopped" || st == "failed" || st == "interrupted" }
	ok := waitUntil(8*time.Minute, 500*time.Millisecond, func() bool {
		var all []lsEntry
		if err := json.Unmarshal([]byte(g.sandbar(t, "ls", "--json")), &all); err != nil {
			t.Fatal(err)
		}
		for _, x := range all {
			if x.ID == id {
				s = x
			}
		}
		if s.State == state && (activity == "" || s.Activity == activity) {
			return true
		}
		if ended(s.State) {
			t.Fatalf("session %s ended %s (%s), want %s %s\n%s", id, s.State, s.Reason, state, activity, g.sandbar(t, "logs", id))
		}
		return false
	})
	if !ok {
		t.Fatalf("session %s is %s/%s (%s) after 8 minutes, want %s %s", id, s.State, s.Activity, s.Reason, state, activity)
	}
}

// checkMainRows measures the Sandbar window's session rows as the app
// shows them at 1280×800: the window's own layout (ui.MainWindowRows) at
// the size it opened at (its first size, 1240×740: Fyne's scale is 1 on
// Xvfb), for the sessions and saved diff stats the app's data directory
// home holds. Each of the five rows
// shows its title, state, changes, where they went and age whole, with
// room for all five.
func checkMainRows(t *testing.T, g *gui, home string, at image.Rectangle) {
	t.Helper()
	if at.Dx() != 1240 || at.Dy() != 740 {
		t.Errorf("the Sandbar window opened at %dx%d, want its first size 1240x740 at scale 1", at.Dx(), at.Dy())
	}
	ctx := context.Background()
	st, err := store.Open(config.Paths{Home: home}.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps, err := st.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := st.Sessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	diffs := map[string]workspace.DiffStat{}
	var wide []struct {
		ID      string
		Changes *workspace.DiffStat
	}
	if err := json.Unmarshal([]byte(g.sandbar(t, "ls", "--wide", "--json")), &wide); err != nil {
		t.Fatal(err)
	}
	for _, w := range wide {
		if w.Changes != nil {
			diffs[w.ID] = *w.Changes
		}
	}
	a := test.NewTempApp(t)
	rep := ui.MainWindowRows(a, fyne.NewSize(float32(at.Dx()), float32(at.Dy())), ps, ss, diffs, time.Now())
	t.Logf("the Sandbar window's list: %d rows laid out, room for %.1f; %d saved diff stats", rep.Rows, rep.Room, len(diffs))
	if len(ss) != 5 || rep.Rows < 5 || rep.Room < 5 {
		t.Errorf("%d sessions: the list lays out %d rows and has room for %.1f, want five", len(ss), rep.Rows, rep.Room)
	}
	for _, c := range rep.Cut {
		t.Error(c)
	}
}
