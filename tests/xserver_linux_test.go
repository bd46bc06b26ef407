package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbar/tests/keyringtest"
)

// startX starts Xvfb on a free display with one screen of size (as
// "1600x900"), stopped when t ends.
func startX(t *testing.T, size string) *xserver {
	t.Helper()
	var width, height int
	if _, err := fmt.Sscanf(size, "%dx%d", &width, &height); err != nil {
		t.Fatalf("screen size %q: want WIDTHxHEIGHT", size)
	}
	fbdir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stderr bytes.Buffer
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", size+"x24", "-fbdir", fbdir, "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	// Xvfb writes the display number once it accepts connections.
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if _, err := strconv.Atoi(n); err != nil {
			t.Fatalf("Xvfb did not start (display %q): %s", n, stderr.String())
		}
		return &xserver{display: ":" + n, fb: filepath.Join(fbdir, "Xvfb_screen0"), screen: image.Rect(0, 0, width, height)}
	case <-time.After(30 * time.Second):
		t.Fatalf("Xvfb did not start within 30 s: %s", stderr.String())
	}
	return nil
}

// waitWindow waits for a visible window whose name matches the regular
// expression name (xdotool search --sync), failing t after d.
func (x *xserver) waitWindow(t *testing.T, name string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdotool", "search", "--sync", "--onlyvisible", "--name", name)
	cmd.Env = append(os.Environ(), "DISPLAY="+x.display)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("no window named %q appeared within %s (xdotool: %v); windows now: %s", name, d, err, x.windows())
	}
	id := strings.Fields(string(out))[0]
	if x.foundAs == nil {
		x.foundAs = map[string]string{}
	}
	x.foundAs[id] = name
	return id
}

// needDesktop skips t unless it can run the real app: not -short, the
// X tools installed, and the private D-Bus session keyringtest.Main runs
// the package in.
func needDesktop(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the real app under Xvfb; skipped with -short")
	}
	for _, tool := range []string{"Xvfb", "xdotool", "dbus-run-session"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: install xvfb, xdotool and dbus (scripts/install-deps.sh does)", tool)
		}
	}
	if !keyringtest.InSession() || os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("needs the private D-Bus session keyringtest.Main starts (dbus-run-session and gnome-keyring)")
	}
}

// desktopEnv is the app's environment on x: every folder it keeps
// anything in under root (a fresh data directory), and a git that knows
// who commits.
func desktopEnv(x *xserver, root string) []string {
	gitconfig := filepath.Join(root, "gitconfig")
	os.WriteFile(gitconfig, []byte("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n"), 0o644)
	runtimeDir := filepath.Join(root, "run")
	os.Mkdir(runtimeDir, 0o700)
	return append(os.Environ(),
		"DISPLAY="+x.display,
		"XDG_RUNTIME_DIR="+runtimeDir,
		"SANDBAR_HOME="+filepath.Join(root, "sandbar"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"XDG_DATA_HOME="+filepath.Join(root, "data"),
		"GIT_CONFIG_GLOBAL="+gitconfig,
		"GIT_CONFIG_NOSYSTEM=1",
		"SANDBAR_DEBUG=1",
	)
}

// screenshot saves the screen to screenshotPath once something is drawn
// and the drawing has settled: two reads a beat apart are the same.
func (g *gui) screenshot(t *testing.T, x *xserver) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(screenshotPath), 0o755); err != nil {
		t.Fatal(err)
	}
	// The beat between two reads is waitUntil's interval.
	var f, prev frame
	if !waitUntil(30*time.Second, 300*time.Millisecond, func() bool {
		prev = f
		var err error
		if f, err = grab(x.fb); err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		return f.colours > 16 && f.same(prev)
	}) {
		t.Fatalf("the screen did not settle into a drawn picture within 30 s (%d colours)", f.colours)
	}
	if err := f.writePNG(screenshotPath); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(screenshotPath)
	t.Logf("screenshot (%d colours): %s", f.colours, abs)
}

// arrange lays the windows side by side, as a window manager would have
// placed them (Xvfb has none: every window opens at the top left).
func (x *xserver) arrange(t *testing.T, names ...string) {
	t.Helper()
	left := 0
	for _, name := range names {
		cmd := exec.Command("xdotool", "search", "--onlyvisible", "--name", name)
		cmd.Env = append(os.Environ(), "DISPLAY="+x.display)
		out, err := cmd.Output()
		ids := strings.Fields(string(out))
		if err != nil || len(ids) == 0 {
			continue // not open: nothing to place
		}
		geo := exec.Command("xdotool", "windowmove", ids[0], strconv.Itoa(left), "0", "getwindowgeometry", "--shell", ids[0])
		geo.Env = cmd.Env
		out, err = geo.Output()
		if err != nil {
			t.Fatalf("place window %q: %v", name, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if w, ok := strings.CutPrefix(l, "WIDTH="); ok {
				n, _ := strconv.Atoi(w)
				left += n + 16
			}
		}
	}
}
