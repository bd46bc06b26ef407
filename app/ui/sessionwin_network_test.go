package ui

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sandbar/app/session"
	"sandbar/app/session/sessiontest"
	"sandbar/app/store"
)

// The in-process VM has no NIC, so its guest tries no connection: these
// tests put denials in the store (what the window reads when it opens)
// and hand the window the events the session's network publishes, on
// the path its events goroutine takes. Allow, the rules, the ports and
// their events are the real Manager's.

// deniedItemFor is the row of the denied list showing host, as drawn.
func deniedItemFor(w *sessionWindow, host string) *deniedItem {
	for _, o := range test.LaidOutObjects(w.net.content) {
		if it, ok := o.(*deniedItem); ok && it.Visible() && it.row != nil && it.row.a.Host == host {
			return it
		}
	}
	return nil
}

// denial is what the session's network publishes for a denied attempt.
func denial(host string, port int, proto string, at time.Time) session.Event {
	a := store.NetAttempt{Proto: proto, Host: host, Port: port, Count: 1, First: at, Last: at,
		Reason: fmt.Sprintf("%s:%d (%s) is not in the session's allowlist", host, port, proto)}
	return session.Event{Kind: session.EventNet, Time: at, Net: &a}
}

// openNetwork opens session id's window on its Network tab.
func (h *swHarness) openNetwork(t *testing.T, id string) *sessionWindow {
	t.Helper()
	w := h.open(t, id)
	selectTab(t, w.tabs, tabNetwork)
	h.q.WaitFor(t, 10*time.Second, "the Network tab's first load", func() bool { return w.net.loaded })
	return w
}

func TestSessionWindowNetworkDenialsAndAllow(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	earlier := time.Now().Add(-time.Minute)
	if _, err := h.env.Store.RecordNetAttempts(ctx, s.ID, []store.NetAttempt{
		{Proto: "tcp", Host: "github.com", Port: 22, Reason: "github.com:22 (tcp) is not in the session's allowlist", First: earlier, Last: earlier, Count: 2},
		{Proto: "tcp", Host: "api.anthropic.com", Port: 443, Allowed: true, Rule: "allow api.anthropic.com", First: earlier, Last: earlier, Count: 142},
	}); err != nil {
		t.Fatal(err)
	}
	w := h.openNetwork(t, s.ID)
	h.q.WaitFor(t, 5*time.Second, "the stored denial and the allowed count shown", func() bool {
		return deniedItemFor(w, "github.com") != nil && strings.Contains(w.net.counts.Text, "142 allowed connections")
	})
	if !strings.HasPrefix(w.net.summary.Text, "Allowlist") {
		t.Errorf("summary %q, want the mode", w.net.summary.Text)
	}
	it := deniedItemFor(w, "github.com")
	if it.dest.Text != "github.com:22" || !strings.HasPrefix(it.meta.Text, "2 times · last ") || !strings.Contains(it.reason.Text, "not in the session's allowlist") {
		t.Errorf("row shows %q %q %q", it.dest.Text, it.meta.Text, it.reason.Text)
	}

	// Live denials: a new destination at the top, a repeat counted in its
	// row.
	now := time.Now()
	w.net.event(denial("github.com", 22, "tcp", now))
	w.net.event(denial("time.example.com", 123, "udp", now.Add(time.Millisecond)))
	h.q.WaitFor(t, 5*time.Second, "the live denials shown", func() bool {
		udp := deniedItemFor(w, "time.example.com")
		return udp != nil && udp.dest.Text == "time.example.com:123/udp" && strings.HasPrefix(deniedItemFor(w, "github.com").meta.Text, "3 times")
	})
	if len(w.net.denied) != 2 || w.net.denied[0].a.Host != "time.example.com" {
		t.Errorf("rows %d, first %q; want 2, the latest first", len(w.net.denied), w.net.denied[0].a.Host)
	}

	// Allow for this session: the rule is in the session's own rules at
	// once, and the row says so.
	it = deniedItemFor(w, "github.com")
	test.Tap(it.forSession)
	h.q.WaitFor(t, 5*time.Second, "the row saying it is allowed", func() bool {
		it := deniedItemFor(w, "github.com")
		return it != nil && strings.HasPrefix(it.reason.Text, "Allowed for this session — try again")
	})
	if rules, err := h.env.Store.SessionNetRules(ctx, s.ID); err != nil || rules != "allow github.com:22\n" {
		t.Errorf("the session's rules are %q, %v", rules, err)
	}
	it = deniedItemFor(w, "github.com")
	if !it.forSession.Disabled() || !it.forProject.Disabled() {
		t.Error("the allowed row still offers Allow")
	}
	h.q.WaitFor(t, 5*time.Second, "the summary counting the session's rule", func() bool { return strings.Contains(w.net.summary.Text, "1 of this session's own") })

	// Allow for this project: in the project's settings.
	test.Tap(deniedItemFor(w, "time.example.com").forProject)
	h.q.WaitFor(t, 5*time.Second, "the UDP row saying it is allowed", func() bool {
		return strings.HasPrefix(deniedItemFor(w, "time.example.com").reason.Text, "Allowed for this project — try again")
	})
	if v, _, err := h.env.Store.ProjectSetting(ctx, s.ProjectID, store.ProjectNetwork); err != nil || v != "allow time.example.com:123/udp\n" {
		t.Errorf("the project's rules are %q, %v", v, err)
	}

	// Denied again after the Allow: the row is back as it was, with its
	// buttons.
	w.net.event(denial("github.com", 22, "tcp", time.Now().Add(time.Second)))
	h.q.WaitFor(t, 5*time.Second, "the row denied again", func() bool {
		it := deniedItemFor(w, "github.com")
		return it != nil && strings.Contains(it.reason.Text, "not in the session's allowlist") && !it.forSession.Disabled()
	})
}

// TestSessionWindowNetworkIsBounded: a flood of denials with long names
// and reasons makes a bounded list, and sizes nothing.
func TestSessionWindowNetworkIsBounded(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.openNetwork(t, s.ID)
	h.q.WaitFor(t, 10*time.Second, "the window to show the session running", func() bool { return !w.chat.Disabled() })
	before := w.win.Content().MinSize()
	long := strings.Repeat("a-very-long-label.", 13) + "example.com"
	ev := denial(long, 443, "tcp", time.Now())
	ev.Net.Reason = strings.Repeat("a reason that goes on and on ", 200)
	w.net.event(ev)
	for i := range 3 * maxDeniedRows {
		w.net.event(denial(fmt.Sprintf("h%d.example.com", i), 443, "tcp", time.Now()))
	}
	h.q.WaitFor(t, 10*time.Second, "the denials listed", func() bool { return len(w.net.denied) == maxDeniedRows })
	w.net.list.Select(0)
	h.q.Drain()
	if after := w.win.Content().MinSize(); after.Width > before.Width || after.Height > before.Height {
		t.Errorf("the window's minimum size went from %v to %v", before, after)
	}
	if !strings.Contains(w.net.counts.Text, fmt.Sprintf("%d destinations denied", maxDeniedRows)) {
		t.Errorf("counts %q", w.net.counts.Text)
	}
}

func TestSessionWindowPorts(t *testing.T) {
	h := newSWHarness(t)
	s, _ := h.start(t, "sleep 60")
	ctx := context.Background()
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.openNetwork(t, s.ID)
	var launched []string
	w.launcher = func(c *exec.Cmd) error {
		launched = append(launched, strings.Join(c.Args, " "))
		return nil
	}
	w.net.look = func(name string) (string, error) { return "/usr/bin/" + name, nil }
	if !strings.HasPrefix(w.net.portsNote.Text, "None yet") || w.net.publish.Disabled() {
		t.Errorf("no ports yet: note %q, Publish disabled %v", w.net.portsNote.Text, w.net.publish.Disabled())
	}

	p, err := h.env.Manager.PublishPort(ctx, s.ID, 5173, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The session's own origin, not the person's localhost (issue 21).
	url := fmt.Sprintf("http://%s.localhost:%d/", s.ID, p.Host)
	if p.URL != url {
		t.Errorf("the port's address is %q, want %q", p.URL, url)
	}
	line := url + " (guest port 5173)"
	h.q.WaitFor(t, 5*time.Second, "the published port listed", func() bool { return shows(w.win, line) })
	if w.net.portsNote.Visible() {
		t.Errorf("with a port the note still says %q", w.net.portsNote.Text)
	}
	test.Tap(buttonIn(t, w.net.portList, "Open"))
	if want := "xdg-open " + url; len(launched) != 1 || !strings.HasSuffix(launched[0], want) {
		t.Errorf("Open launched %q, want %q", launched, want)
	}
	test.Tap(buttonIn(t, w.net.portList, "Unpublish"))
	h.q.WaitFor(t, 5*time.Second, "the port unpublished", func() bool { return len(w.net.ports) == 0 && !shows(w.win, line) })
	if ports, _ := h.env.Manager.Ports(ctx, s.ID); len(ports) != 0 {
		t.Errorf("the session still publishes %v", ports)
	}

	test.Type(w.net.guestPort, "8081")
	test.Tap(w.net.publish)
	h.q.WaitFor(t, 5*time.Second, "a port published from the window", func() bool {
		return len(w.net.ports) == 1 && w.net.ports[0].Guest == 8081 && strings.HasPrefix(w.net.portsStatus.Text, "Published")
	})

	if _, err := h.env.Manager.Stop(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	h.q.WaitFor(t, 20*time.Second, "the ports gone with the session", func() bool {
		return len(w.net.ports) == 0 && strings.HasPrefix(w.net.portsNote.Text, "None: ports are published while the session runs") && w.net.publish.Disabled()
	})
}

func TestSessionWindowNetworkOff(t *testing.T) {
	h := newSWHarness(t)
	repo := h.env.Repo(t, "offline")
	s, err := h.env.Manager.Start(context.Background(), session.Options{Repo: repo, MemoryMiB: 512, Network: session.NetworkOff, Agent: sessiontest.Shell("sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	h.env.WaitState(t, s.ID, session.StateRunning, 20*time.Second)
	w := h.openNetwork(t, s.ID)
	h.q.WaitFor(t, 5*time.Second, "the tab saying there is no network", func() bool {
		return strings.HasPrefix(w.net.summary.Text, "Off: the session runs without a network card") &&
			strings.Contains(w.net.portsNote.Text, "without a network")
	})
	if !w.net.publish.Disabled() || w.net.loadNote.Visible() {
		t.Errorf("no network: Publish disabled %v, problem shown %q", w.net.publish.Disabled(), w.net.loadNote.Text)
	}
}

// buttonIn is the first button labelled text drawn in l.
func buttonIn(t *testing.T, l *widget.List, text string) *widget.Button {
	t.Helper()
	for _, x := range test.LaidOutObjects(l) {
		if b, ok := x.(*widget.Button); ok && b.Visible() && b.Text == text {
			return b
		}
	}
	t.Fatalf("no %q button is shown", text)
	return nil
}
