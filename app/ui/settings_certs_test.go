package ui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sandbar/app/net/hosttrust"
	"sandbar/app/net/hosttrust/hosttrusttest"
	"sandbar/app/store"
)

// TestSettingsHostCerts: Settings → Network names each certificate this
// machine trusts (subject and fingerprint) and what it left out, and its
// check turns carrying them off and on in the store.
func TestSettingsHostCerts(t *testing.T) {
	h := newAppHarness(t)
	dir, der := hosttrusttest.Dir(t, "Corp Inspection CA")
	h.prefs.HostTrust = hosttrust.Source{Dir: dir}

	w := h.networkSettings(t)
	c := w.certs
	h.q.WaitFor(t, 5*time.Second, "the certificates read", func() bool { return c.loaded })
	if !c.check.Checked {
		t.Error("carrying this machine's certificates is on by default, but the check is off")
	}
	for _, want := range []string{"CN=Corp Inspection CA", "SHA-256 " + hosttrust.Fingerprint(der), "Not carried: " + filepath.Join(dir, "broken.crt")} {
		if !strings.Contains(c.list.Text, want) {
			t.Errorf("the list does not show %q:\n%s", want, c.list.Text)
		}
	}
	if !shows(w.win, "never a private key") {
		t.Error("the section does not say that no private key travels")
	}
	ctx := context.Background()
	test.Tap(c.check)
	h.q.WaitFor(t, 5*time.Second, "the setting saved", func() bool { return strings.HasPrefix(c.status.Text, "Saved") })
	if v, _, _ := h.env.Store.Setting(ctx, store.SettingHostCerts); v != "off" {
		t.Errorf("after unchecking, the setting is %q", v)
	}
	if on, _ := h.env.Manager.HostCertsOn(ctx); on {
		t.Error("the Manager still reads it on")
	}
	test.Tap(c.check)
	h.q.WaitFor(t, 5*time.Second, "the setting saved again", func() bool { return strings.Contains(c.status.Text, "trust them.") })
	if on, _ := h.env.Manager.HostCertsOn(ctx); !on {
		t.Error("checked again, the Manager reads it off")
	}
}
