package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/store"
	"sandbar/app/workspace"
)

// TestProjectTrust: the Sandbar window's banner says a repository's
// settings file is not trusted; Review… opens Project Settings at Trust,
// which shows what the file asks for (the repository's text, control
// characters made visible); Trust records that content's hash. A change
// is shown as a diff from the trusted version, and Ignore records it.
func TestProjectTrust(t *testing.T) {
	h := newAppHarness(t)
	ctx := context.Background()
	p := h.addProject(t, "trusted")
	netFile := filepath.Join(p.Path, ".sandbar", "network")
	os.MkdirAll(filepath.Dir(netFile), 0o755)
	if err := os.WriteFile(netFile, []byte("allow a.example # \x1b]0;pwned\x07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mw := h.mainWindow(t)
	mw.reload()
	h.q.WaitFor(t, 10*time.Second, "the trust banner", func() bool {
		return mw.trustBanner.box.Visible() && strings.Contains(mw.trustBanner.text.Text, "This repository's .sandbar/network is not trusted yet, so it was not used")
	})
	if !mw.trustBanner.action.Visible() || mw.trustBanner.action.Text != "Review…" {
		t.Fatalf("the banner has no Review…: %q", mw.trustBanner.action.Text)
	}
	test.Tap(mw.trustBanner.action)
	w := h.u.projectWins[p.ID]
	if w == nil {
		t.Fatal("Review… opened no Project Settings")
	}
	h.q.WaitFor(t, 10*time.Second, "the Trust tab, loaded", func() bool {
		return w.trust != nil && w.tabs.Selected() != nil && w.tabs.Selected().Text == tabTrust && w.trust.diffs[workspace.SettingsNetwork] != nil
	})
	diff := w.trust.diffs[workspace.SettingsNetwork].Text
	if diff != "--- .sandbar/network (new)\n+allow a.example # \\x1b]0;pwned\\x07" {
		t.Errorf("the diff shown: %q", diff)
	}
	if !shows(w.win, ".sandbar/network: not trusted yet, so not used") || !shows(w.win, "What it asks for (never trusted before):") {
		t.Errorf("the Trust tab shows %q", texts(w.win.Canvas().Content()))
	}
	if w.trust.trust.Disabled() || w.trust.ignore.Disabled() {
		t.Fatal("Trust and Ignore are disabled with a file waiting")
	}
	shown := w.trust.review.Proposal(workspace.SettingsNetwork).Hash

	test.Tap(w.trust.trust)
	var got []store.RepoTrust
	h.q.WaitFor(t, 10*time.Second, "the trust recorded", func() bool {
		got, _ = h.env.Store.RepoTrusts(ctx, p.ID)
		return len(got) == 1 && strings.HasPrefix(w.trust.status.Text, "Trusted")
	})
	if got[0].Kind != workspace.SettingsNetwork || got[0].Decision != store.TrustTrusted || got[0].Hash != shown {
		t.Errorf("recorded %+v, want the network file trusted at hash %s", got[0], shown)
	}
	if !w.trust.trust.Disabled() || !shows(w.win, ".sandbar/network: trusted") {
		t.Errorf("after Trust: %q", texts(w.win.Canvas().Content()))
	}
	h.q.WaitFor(t, 10*time.Second, "the trust banner gone", func() bool { return !mw.trustBanner.box.Visible() })

	// A change: the diff from the trusted version; Ignore records it.
	if err := os.WriteFile(netFile, []byte("allow a.example # \x1b]0;pwned\x07\nallow 0.0.0.0/0:*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.trust.load()
	h.q.WaitFor(t, 10*time.Second, "the change shown", func() bool {
		d := w.trust.diffs[workspace.SettingsNetwork]
		return d != nil && strings.Contains(d.Text, "\n+allow 0.0.0.0/0:*")
	})
	if d := w.trust.diffs[workspace.SettingsNetwork].Text; d != "--- .sandbar/network\n allow a.example # \\x1b]0;pwned\\x07\n+allow 0.0.0.0/0:*" {
		t.Errorf("the change shown: %q", d)
	}
	if !shows(w.win, "Changes since the version you trusted:") || !shows(w.win, "Refused as a whole, even if trusted: line 2: `allow 0.0.0.0/0:*`: a repository's network file may not use a `*` port; put wider rules in your own settings: sandbar net rules --project") {
		t.Errorf("the Trust tab after a change shows %q", texts(w.win.Canvas().Content()))
	}
	test.Tap(w.trust.ignore)
	h.q.WaitFor(t, 10*time.Second, "the ignore recorded", func() bool {
		got, _ = h.env.Store.RepoTrusts(ctx, p.ID)
		return len(got) == 2 && strings.HasPrefix(w.trust.status.Text, "Ignored")
	})
	if !shows(w.win, ".sandbar/network: ignored") {
		t.Errorf("after Ignore: %q", texts(w.win.Canvas().Content()))
	}
}
