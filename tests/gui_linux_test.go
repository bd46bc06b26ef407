//go:build linux

package tests

import (
	"bytes"
	"context"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// The GUI end to end: the real sandbar binary on a real X server (Xvfb),
// on the private D-Bus session keyringtest runs this package in, where
// the test plays the desktop: the tray host (a StatusNotifierWatcher that
// reads the menu over com.canonical.dbusmenu and clicks in it) and the
// notification server.

// screenshotPath is where the test leaves its screenshot of the whole
// screen (TestScreenshots takes the README's, of one window each).
const screenshotPath = "artifacts/screenshot.png"

// xserver is an Xvfb with its framebuffer in a file.
type xserver struct {
	display string
	fb      string          // the screen's framebuffer, an xwd dump
	screen  image.Rectangle // the screen, at 0,0

	// foundAs is the name each window was found by (waitWindow), for a
	// failure to say.
	foundAs map[string]string
}

// gui is a running sandbar GUI.
type gui struct {
	cmd    *exec.Cmd
	env    []string
	bin    string
	log    string // its output
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

func TestGUI(t *testing.T) {
	needDesktop(t)
	bin := sandbarBin(t)

	// The desktop's side of D-Bus, up before the app so that it finds
	// them as a desktop's session would have them.
	bus, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	tray := startWatcher(t, bus)
	notes := startNotifications(t, bus)

	x := startX(t, "1600x900")
	root := t.TempDir()
	env := desktopEnv(x, root)
	g := launch(t, bin, env, filepath.Join(root, "sandbar.log"))

	// 1. The main window appears.
	x.waitWindow(t, "^Sandbar$", time.Minute)

	// 2. The tray item registers and its menu reads over D-Bus.
	var item trayItem
	select {
	case item = <-tray.items:
	case <-time.After(30 * time.Second):
		t.Fatal("no StatusNotifierItem registered with the watcher within 30 s")
	}
	menu := g.waitMenu(t, bus, item, "the standard items", func(m menuNode) bool {
		got := m.labels()
		for _, want := range []string{"New Session…", "Open Sandbar", "Settings…", "Quit"} {
			if !slices.Contains(got, want) {
				return false
			}
		}
		return true
	})
	t.Logf("tray menu: %q", menu.labels())
	iw, ih, idle, err := trayIcon(bus, item)
	if err != nil {
		t.Fatal(err)
	}
	if iw != 44 || ih != 44 {
		t.Errorf("the tray icon is %dx%d, want the 44x44 tray icon", iw, ih)
	}

	// 3. A project added through the CLI (the GUI is the engine) shows
	// in the menu, live.
	repo := filepath.Join(root, "repos", "shop front")
	g.git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# shop front\n"), 0o644)
	g.git(t, repo, "add", ".")
	g.git(t, repo, "commit", "-qm", "first")
	g.sandbar(t, "project", "add", repo)
	g.waitMenu(t, bus, item, "the project under Recent Projects", func(m menuNode) bool {
		_, ok := m.find("shop front")
		return ok
	})

	// 4. A session that ends at once brings a notification (needs the
	// guest image).
	if os.Getenv("SANDBAR_IMAGE_DIR") == "" {
		t.Log("SANDBAR_IMAGE_DIR is not set: skipping the session and its notification (run `make test`, which builds the guest image)")
	} else {
		out := g.sandbar(t, "start", "--repo", repo, "--agent", "true", "--prompt", "Fix the login bug\nIt fails with spaces.")
		t.Logf("started: %s", strings.TrimSpace(out))
		// The notification says the session's title (its prompt's first
		// line) and what happened; where it works beneath.
		n := notes.wait(t, "Fix the login bug — finished", 4*time.Minute)
		if !strings.HasPrefix(n.Body, "shop front · sandbar/") || n.App != "Sandbar" {
			t.Errorf("notification %+v: want the project and branch, from Sandbar", n)
		}
		// The finished session needs the person: the icon says so, and
		// the menu lists it by its title.
		g.waitMenu(t, bus, item, "the finished session", func(m menuNode) bool {
			for _, l := range m.labels() {
				if strings.HasPrefix(l, "Fix the login bug · finished · ") {
					return true
				}
			}
			return false
		})
		if _, _, now, err := trayIcon(bus, item); err != nil || bytes.Equal(now, idle) {
			t.Errorf("the tray icon did not change from idle when the session finished (%v)", err)
		}
		// Clicking the notification opens the session's window, and the
		// person has seen it: the icon is idle again.
		notes.click(t, n)
		x.waitWindow(t, "^Fix the login bug .+ shop front$", 30*time.Second)
		if !waitUntil(30*time.Second, 200*time.Millisecond, func() bool {
			_, _, now, err := trayIcon(bus, item)
			return err == nil && bytes.Equal(now, idle)
		}) {
			t.Errorf("the tray icon still asks for attention after the notification was clicked and the session opened")
		}
	}

	// 5. A screenshot: the Sandbar window, and the welcome window beside
	// it (its checklist is what a first run looks at).
	x.arrange(t, "^Sandbar$", "^Welcome to Sandbar$")
	g.screenshot(t, x)

	// 6. Clicking Settings… in the tray opens the Settings window.
	g.clickItem(t, bus, item, "Settings…")
	x.waitWindow(t, "Settings", 30*time.Second)

	// 6b. Add Repository… in the tray, where no desktop portal runs on
	// the bus, opens Add a Repository (a typed path, recent folders)
	// within the portal's few seconds.
	var activatable []string
	bus.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&activatable)
	if slices.Contains(activatable, "org.freedesktop.portal.Desktop") {
		t.Log("xdg-desktop-portal can start on this bus: skipping the step that needs it absent")
	} else {
		g.clickItem(t, bus, item, "Add Repository…")
		x.waitWindow(t, "^Add a Repository$", 30*time.Second)
	}

	// 7. Quit from the tray: no session runs, so it quits at once.
	g.quitFromTray(t, bus, item)

	// 8. Beside an engine it is not (the `sandbar serve` a CLI command
	// starts), the app is that engine's client: the same menu, live;
	// sessions the engine runs notify here; quitting leaves the engine
	// and its sessions running.
	serve := exec.Command(bin, "serve", "--idle-exit", "0")
	serve.Env = env
	serveLog, err := os.Create(filepath.Join(root, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer serveLog.Close()
	serve.Stdout, serve.Stderr = serveLog, serveLog
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { serve.Wait(); close(served) }()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-served:
		case <-time.After(40 * time.Second):
			serve.Process.Kill()
			<-served
		}
	})
	if !waitUntil(30*time.Second, 50*time.Millisecond, func() bool {
		out, err := os.ReadFile(filepath.Join(root, "sandbar", "engine.lock"))
		return err == nil && strings.TrimSpace(string(out)) == strconv.Itoa(serve.Process.Pid)
	}) {
		t.Fatal("sandbar serve did not become the engine within 30 s")
	}
	c := launch(t, bin, env, filepath.Join(root, "sandbar-client.log"))
	x.waitWindow(t, "^Sandbar$", time.Minute)
	select {
	case item = <-tray.items:
	case <-time.After(30 * time.Second):
		t.Fatal("the client's tray item did not register within 30 s")
	}
	c.waitMenu(t, bus, item, "the standard items and the project", func(m menuNode) bool {
		got := m.labels()
		_, project := m.find("shop front")
		return project && slices.Contains(got, "New Session…") && slices.Contains(got, "Quit")
	})
	if os.Getenv("SANDBAR_IMAGE_DIR") != "" {
		c.sandbar(t, "start", "--repo", repo, "--agent", "true", "--prompt", "Tidy the docs")
		n := notes.wait(t, "Tidy the docs — finished", 4*time.Minute)
		if !strings.Contains(n.Body, "shop front") {
			t.Errorf("the client's notification %+v does not name the project", n)
		}
	}
	c.quitFromTray(t, bus, item)
	select {
	case <-served:
		t.Error("the engine exited when its client quit")
	default:
	}
}

// launch starts the app with env, its output in logPath, and ends it when
// the test ends.
func launch(t *testing.T, bin string, env []string, logPath string) *gui {
	t.Helper()
	// Output to a file, not a pipe: a pipe would keep Wait waiting for
	// any process the app started that still holds it.
	logF, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logF.Close()
	g := &gui{env: env, bin: bin, log: logPath, exited: make(chan struct{})}
	g.cmd = exec.Command(bin)
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = logF, logF
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g.err = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-g.exited:
			case <-time.After(40 * time.Second):
				g.cmd.Process.Kill()
				<-g.exited
			}
		}
		if t.Failed() {
			out, _ := os.ReadFile(g.log)
			t.Logf("sandbar's output:\n%s", out)
		}
	})

	return g
}

// clickItem clicks the tray menu's item labelled label once the menu
// shows it. The item's id is read just before: ids change when the app
// rebuilds its menu (a session finishing does), so an id read earlier
// may name nothing by the time of the click.
func (g *gui) clickItem(t *testing.T, bus *dbus.Conn, it trayItem, label string) {
	t.Helper()
	var node menuNode
	g.waitMenu(t, bus, it, label, func(m menuNode) bool {
		n, ok := m.find(label)
		node = n
		return ok
	})
	_, obj := g.menu(t, bus, it)
	if err := click(obj, node.ID); err != nil {
		t.Fatalf("click %s: %v", label, err)
	}
}

// quitFromTray clicks Quit and waits for the app to exit, clicking
// again while it has not (a click that met a menu rebuild names an id
// that is gone), for up to 40 s.
func (g *gui) quitFromTray(t *testing.T, bus *dbus.Conn, it trayItem) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		g.clickItem(t, bus, it, "Quit")
		select {
		case <-g.exited:
			if g.err != nil {
				t.Errorf("sandbar exited with %v after Quit", g.err)
			}
			return
		case <-time.After(5 * time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbar did not exit within 40 s of Quit")
		}
	}
}

// menu reads the tray menu once.
func (g *gui) menu(t *testing.T, bus *dbus.Conn, it trayItem) (menuNode, dbus.BusObject) {
	t.Helper()
	m, obj, err := trayMenu(bus, it)
	if err != nil {
		t.Fatal(err)
	}
	return m, obj
}

// waitMenu reads the tray menu until ok holds, on a short beat: the
// menu changes when the app's model does, and the first GetLayout after
// a rebuild is answered only one level deep (fyne.io/systray's
// workaround for libdbusmenu), so one read is not enough.
func (g *gui) waitMenu(t *testing.T, bus *dbus.Conn, it trayItem, what string, ok func(menuNode) bool) menuNode {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last menuNode
	var lastErr error
	for time.Now().Before(deadline) {
		m, _, err := trayMenu(bus, it)
		if err == nil && ok(m) {
			return m
		}
		last, lastErr = m, err
		select {
		case <-g.exited:
			t.Fatalf("sandbar exited (%v) while the test waited for %s", g.err, what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("the tray menu never showed %s: last read %q (%v)", what, last.labels(), lastErr)
	return menuNode{}
}

// sandbar runs the CLI beside the GUI and returns its output.
func (g *gui) sandbar(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbar %q: %v\n%s", args, err, out)
	}
	return string(out)
}

func (g *gui) git(t *testing.T, dir string, args ...string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = g.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}
