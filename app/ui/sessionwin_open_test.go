package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
)

func TestWorkspaceOpeners(t *testing.T) {
	dir := "/work/space"
	found := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, x := range names {
				if x == n {
					return "/usr/bin/" + n, nil
				}
			}
			return "", exec.ErrNotFound
		}
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	byLabel := func(os []opener) map[string]opener {
		m := map[string]opener{}
		for _, o := range os {
			m[o.label] = o
		}
		return m
	}
	cases := []struct {
		name     string
		env      func(string) string
		look     func(string) (string, error)
		terminal string // argv joined, or "missing"
		editor   string
	}{
		{"nothing", env(), found(), "missing", "missing"},
		{"debian", env("EDITOR", "vim"), found("xdg-open", "x-terminal-emulator"), "x-terminal-emulator -e /opt/sandbar shell abc", "x-terminal-emulator -e vim /work/space"},
		{"visual wins", env("VISUAL", "code -w", "EDITOR", "vim"), found("xdg-open", "xterm", "code"), "xterm -e /opt/sandbar shell abc", "code -w /work/space"},
		{"vs code", env(), found("code", "konsole"), "konsole -e /opt/sandbar shell abc", "code /work/space"},
		{"gnome", env("EDITOR", "nano"), found("gnome-terminal", "xterm"), "gnome-terminal -- /opt/sandbar shell abc", "gnome-terminal -- nano /work/space"},
		{"$TERMINAL first", env("TERMINAL", "kitty"), found("kitty", "xterm"), "kitty /opt/sandbar shell abc", "missing"},
		{"$TERMINAL not installed", env("TERMINAL", "foot"), found("xfce4-terminal"), "xfce4-terminal -x /opt/sandbar shell abc", "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os := byLabel(append(workspaceOpeners(dir, c.env, c.look), shellOpener("/opt/sandbar", "abc", c.env, c.look)))
			if _, ok := os["Terminal app"]; !ok {
				t.Fatal("no Terminal opener")
			}
			if term := os["Terminal app"]; !term.vm || term.dir != "" {
				t.Errorf("the Terminal opens into the VM, not a host folder: %+v", term)
			}
			if term := os["Terminal app"]; term.missing != "" && !strings.Contains(term.missing, "Terminal tab") {
				t.Errorf("no terminal app: %q does not point to the Terminal tab's shell", term.missing)
			}
			check := func(label, want string) {
				o := os[label]
				got := strings.Join(o.argv, " ")
				if o.missing != "" {
					got = "missing"
				}
				if runtime.GOOS == "linux" && got != want {
					t.Errorf("%s: %q (missing %q), want %q", label, got, o.missing, want)
				}
				if o.missing == "" && !o.vm && o.dir != dir {
					t.Errorf("%s runs in %q", label, o.dir)
				}
			}
			check("Terminal app", c.terminal)
			check("Editor", c.editor)
		})
	}
}

// TestSessionWindowOpenButtons: the Files and Editor buttons open a
// read-only copy of the session's files that Sandbar writes when one is
// pressed, never the agent's own folder, and the window says so.
func TestSessionWindowOpenButtons(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, `echo v1 > made.txt; echo ready; while read l; do echo "$l" > made.txt; echo "wrote $l"; done`)
	t.Setenv("VISUAL", "an-editor --wait") // so the Editor button is there on every machine
	w := h.open(t, s.ID)
	var launched []string
	w.launcher = func(c *exec.Cmd) error {
		launched = append(launched, c.Dir+"|"+strings.Join(c.Args, " "))
		return nil
	}
	h.q.WaitFor(t, 30*time.Second, "the agent to write its file", func() bool { return logHas(w.logs, "ready") })
	h.q.WaitFor(t, 30*time.Second, "the open buttons to be enabled", func() bool {
		return !w.openers[0].btn.Disabled() || w.openers[0].o.missing != ""
	})
	if !strings.Contains(w.openMsg.Text, "read-only copy") || !strings.Contains(w.openMsg.Text, "VM") {
		t.Errorf("the window does not say the buttons open a read-only copy, the agent's files being in its VM: %q", w.openMsg.Text)
	}
	export := h.env.Paths.SessionDir(s.ID).Export()
	tapped := 0
	for _, b := range w.openers {
		if b.o.missing != "" {
			if !b.btn.Disabled() || !strings.Contains(w.openMsg.Text, b.o.missing) {
				t.Errorf("%s is unavailable (%s) but enabled, or the note %q does not say why", b.o.label, b.o.missing, w.openMsg.Text)
			}
			continue
		}
		test.Tap(b.btn)
		tapped++
		h.q.WaitFor(t, 30*time.Second, b.o.label+" to launch", func() bool { return len(launched) == tapped || w.notice.text() != "" })
	}
	if w.notice.text() != "" {
		t.Fatalf("opening the copy failed: %s", w.notice.text())
	}
	for _, l := range launched {
		// Nothing opens the agent's repository in a host shell: the
		// Terminal is a shell inside the VM.
		if strings.Contains(l, " shell "+s.ID) {
			continue
		}
		if !strings.HasPrefix(l, export+"|") {
			t.Errorf("launched %q, want it in %s", l, export)
		}
	}
	if tapped == 0 {
		t.Fatal("no open button could be pressed, though $VISUAL is set")
	}
	if b, err := os.ReadFile(filepath.Join(export, "made.txt")); err != nil || string(b) != "v1\n" {
		t.Errorf("the copy lacks the agent's uncommitted file: %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(export, "made.txt"))
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("the copy's file is %v (%v), want read-only", fi.Mode(), err)
	}
	if !strings.Contains(w.openMsg.Text, "as of") || !strings.Contains(w.openMsg.Text, export) {
		t.Errorf("after a copy is made the window does not say where and as of when: %q", w.openMsg.Text)
	}
	// The session moves on: the next press writes a new copy.
	if err := h.env.Manager.Chat(context.Background(), s.ID, "v2"); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 30*time.Second, "the agent to write again", func() bool { return logHas(w.logs, "wrote v2") })
	launched = nil
	for _, b := range w.openers {
		if b.o.missing == "" {
			test.Tap(b.btn)
			break
		}
	}
	h.q.WaitFor(t, 30*time.Second, "the second launch", func() bool { return len(launched) == 1 || w.notice.text() != "" })
	if b, err := os.ReadFile(filepath.Join(export, "made.txt")); err != nil || string(b) != "v2\n" {
		t.Errorf("the copy was not refreshed: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(h.env.Paths.Session(s.ID), "workspace")); !os.IsNotExist(err) {
		t.Errorf("a workspace folder exists on the host: %v", err)
	}

	// The log's "Open the full log" opens agent.log, which keeps every
	// line, where a desktop can open files.
	if _, err := exec.LookPath("xdg-open"); runtime.GOOS == "linux" && err == nil {
		if w.logs.OnOpenOlder == nil {
			t.Fatal("xdg-open is installed but the log view cannot open agent.log")
		}
		launched = nil
		w.logs.OnOpenOlder()
		logFile := filepath.Join(h.env.Paths.Session(s.ID), "agent.log")
		if len(launched) != 1 || launched[0] != filepath.Dir(logFile)+"|xdg-open "+logFile {
			t.Errorf("opening the full log launched %q, want xdg-open %s", launched, logFile)
		}
	}
}

func TestShellQuoting(t *testing.T) {
	self := `/Applications/Sand "bar".app/it's\sandbar`
	line := shellQuote(self) + " shell " + shellQuote("abc")
	out, err := exec.Command("sh", "-c", "printf '%s|' "+line).Output()
	if err != nil || string(out) != self+"|shell|abc|" {
		t.Fatalf("sh read %q as %q (%v)", line, out, err)
	}
	if got, want := appleScriptString(`say "hi" \ bye`), `"say \"hi\" \\ bye"`; got != want {
		t.Errorf("appleScriptString = %s, want %s", got, want)
	}
}
